package orgs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
)

// Removal is the outcome of RemoveUser.
type Removal struct {
	UserID        string    `json:"user_id"`
	RemovedAt     time.Time `json:"removed_at"`
	TokensRevoked int       `json:"tokens_revoked"`
}

// RemoveUser removes a member from orgID: their tokens are revoked in the
// same transaction, so they are refused on the very next call; they can no
// longer log in, be listed or be asked, and every new action names them "not
// found". Their row stays, marked removed, so that questions they asked stay
// readable as from a former member, and their id is never given to someone
// else. The last admin of an org cannot be removed. The caller must have been
// authorized as an admin of orgID.
//
// Returns EInvalid for a malformed id, ENotFound when userID is not a current
// member, EConflict for the last admin.
func (s *Service) RemoveUser(ctx context.Context, orgID, userID string) (*Removal, error) {
	return s.remove(ctx, orgID, userID, false)
}

// removed reports whether userID belonged to a member who was removed from
// orgID.
func (s *Service) removed(ctx context.Context, orgID, userID string) bool {
	var n int
	err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM users WHERE org_id = $1 AND id = $2 AND removed_at IS NOT NULL`, orgID, userID).Scan(&n)
	return err == nil && n > 0
}

// FormerMember is the name an erased member's row keeps, under which what
// they wrote to others (questions, answers, channel messages) stays.
const FormerMember = "a former member"

// EraseUser removes a member, as RemoveUser does, if they are still one,
// and erases their account and profile in the same transaction: their
// name becomes FormerMember, their notes, the admins' profile notes,
// ownership, email address, away status and last call are cleared, their
// password and every credential go, and so does every row of theirs in a
// table with a user_id column (read from the catalog: passkeys, sessions,
// notification settings, webhooks and browsers, channel memberships, Slack
// link, invites, …) but the audit log, which records only ids. What they
// wrote to others stays under FormerMember: the questions they asked and
// answered, their drafts and shared answers, their channel messages. Their
// id stays the key of those rows and is never given to someone else. The
// caller must have been authorized as an admin of orgID.
//
// Returns EInvalid for a malformed id, ENotFound when userID was never a
// member, EConflict for the last admin.
func (s *Service) EraseUser(ctx context.Context, orgID, userID string) (*Removal, error) {
	return s.remove(ctx, orgID, userID, true)
}

// remove is RemoveUser, and with erase EraseUser, which also takes a
// member removed already.
func (s *Service) remove(ctx context.Context, orgID, userID string, erase bool) (*Removal, error) {
	userID, err := ctalk.ParseID("user_id", userID)
	if err != nil {
		return nil, err
	}
	r := &Removal{UserID: userID}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		if err := s.lockOrg(ctx, tx, orgID); err != nil {
			return err
		}
		var removed db.NullTime
		if erase {
			err := tx.QueryRow(ctx, `SELECT removed_at FROM users WHERE org_id = $1 AND id = $2`, orgID, userID).Scan(&removed)
			if errors.Is(err, sql.ErrNoRows) {
				return auth.NotFoundUser(userID)
			}
			if err != nil {
				return fmt.Errorf("read users: %w", err)
			}
		}
		now := s.db.Now()
		r.RemovedAt = removed.Time
		if !removed.Valid {
			role, otherAdmins, err := s.adminCount(ctx, tx, orgID, userID)
			if err != nil {
				return err
			}
			if role == RoleAdmin && otherAdmins == 0 {
				return ctalk.Errorf(ctalk.EConflict, "user %q is the last admin of organization %q and cannot be removed; add another admin first (register_user with role admin)", userID, orgID)
			}
			r.RemovedAt = now
			if _, err := tx.Exec(ctx, `UPDATE users SET removed_at = $1, updated_at = $1 WHERE org_id = $2 AND id = $3`,
				r.RemovedAt, orgID, userID); err != nil {
				return fmt.Errorf("update users: %w", err)
			}
		}
		if erase {
			if _, err := tx.Exec(ctx, `UPDATE users SET updated_at = $1, name = $2, notes = '', profile_notes = '', ownership = '[]',
				email = NULL, away_until = NULL, away_delegate = '', away_note = '', last_seen_at = NULL
				WHERE org_id = $3 AND id = $4`, now, FormerMember, orgID, userID); err != nil {
				return fmt.Errorf("update users: %w", err)
			}
		}
		if r.TokensRevoked, err = auth.RemoveCredentials(ctx, tx, orgID, userID, now); err != nil || !erase {
			return err
		}
		_, err = s.db.PurgeUser(ctx, tx, orgID, userID, "users", "audit_events")
		return err
	})
	if err != nil {
		return nil, err
	}
	s.auth.Revoked(ctx, orgID, userID)
	s.changed(ctx, orgID, userID)
	return r, nil
}
