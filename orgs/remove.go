package orgs

import (
	"context"
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
	userID, err := ctalk.ParseID("user_id", userID)
	if err != nil {
		return nil, err
	}
	r := &Removal{UserID: userID}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		if err := s.lockOrg(ctx, tx, orgID); err != nil {
			return err
		}
		role, otherAdmins, err := s.adminCount(ctx, tx, orgID, userID)
		if err != nil {
			return err
		}
		if role == RoleAdmin && otherAdmins == 0 {
			return ctalk.Errorf(ctalk.EConflict, "user %q is the last admin of organization %q and cannot be removed; add another admin first (register_user with role admin)", userID, orgID)
		}
		r.RemovedAt = s.db.Now()
		if _, err := tx.Exec(ctx, `UPDATE users SET removed_at = $1, updated_at = $1 WHERE org_id = $2 AND id = $3`,
			r.RemovedAt, orgID, userID); err != nil {
			return fmt.Errorf("update users: %w", err)
		}
		r.TokensRevoked, err = auth.RemoveCredentials(ctx, tx, orgID, userID, r.RemovedAt)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.auth.Revoked(ctx, orgID, userID)
	s.changed(ctx, orgID, userID)
	return r, nil
}

// removed reports whether userID belonged to a member who was removed from
// orgID.
func (s *Service) removed(ctx context.Context, orgID, userID string) bool {
	var n int
	err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM users WHERE org_id = $1 AND id = $2 AND removed_at IS NOT NULL`, orgID, userID).Scan(&n)
	return err == nil && n > 0
}
