package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// InviteTTL is how long an invite's link works after it was (re)sent.
const InviteTTL = 7 * 24 * time.Hour

// Invite is an invitation by email to join an org as UserID, waiting for
// the person to open its link and choose a password. Its token is never
// stored or shown: only its hash is kept, and the link goes only by mail.
type Invite struct {
	OrgID     string    `json:"org_id"`
	UserID    string    `json:"user_id"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	InvitedBy string    `json:"invited_by"`
	CreatedAt time.Time `json:"created_at"`
	SentAt    time.Time `json:"sent_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Expired is set by Invites for an invite whose link no longer works:
	// it can be resent or revoked.
	Expired bool `json:"expired,omitempty"`
}

const inviteColumns = `org_id, user_id, email, name, role, invited_by, created_at, sent_at, expires_at`

func scanInvite(r interface{ Scan(...any) error }) (*Invite, error) {
	i := &Invite{}
	err := r.Scan(&i.OrgID, &i.UserID, &i.Email, &i.Name, &i.Role, &i.InvitedBy, &i.CreatedAt, &i.SentAt, &i.ExpiresAt)
	return i, err
}

// deadLink is the one answer for an invite or reset link that is unknown,
// used, replaced, revoked or expired, so that a link reveals nothing.
func deadLink(what, next string) error {
	return ctalk.Errorf(ctalk.ENotFound, "this %s link does not work: it was already used, replaced by a newer one, withdrawn, or it expired; %s", what, next)
}

// CreateInvite stores inv, inside tx, with a new link token valid until
// now+InviteTTL, and returns the token; the invite counts against the
// limits of its admin (inv.InvitedBy) and of its org. The orgs package
// calls it after checking that the user id and address are free.
//
// Returns EConflict when the user id or address already has a pending
// invite in the org, ERateLimited (see countInvite).
func (s *Service) CreateInvite(ctx context.Context, tx db.Querier, inv *Invite, now time.Time) (raw string, err error) {
	if err := s.countInvite(ctx, tx, inv.OrgID, inv.InvitedBy, now); err != nil {
		return "", err
	}
	raw, hash := NewToken()
	inv.CreatedAt, inv.SentAt, inv.ExpiresAt = now, now, now.Add(InviteTTL)
	_, err = tx.Exec(ctx, `INSERT INTO invites (org_id, user_id, email, name, role, invited_by, token_hash, created_at, sent_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9)`,
		inv.OrgID, inv.UserID, inv.Email, inv.Name, inv.Role, inv.InvitedBy, hash, now, inv.ExpiresAt)
	if ctalk.ErrorCode(err) == ctalk.EConflict {
		return "", ctalk.Errorf(ctalk.EConflict, "%s or %s already has an invite waiting; resend or revoke it on the admin page", inv.UserID, inv.Email)
	}
	if err != nil {
		return "", fmt.Errorf("insert into invites: %w", err)
	}
	return raw, nil
}

// countInvite counts, in tx, an invite mail that the admin by (empty for
// the org's admin password) has sent in orgID, against the limits of the
// admin and of the org, and forgets the org's mails older than
// InviteWindow. A transaction that rolls back counts nothing.
//
// Returns ERateLimited when the admin has sent InviteMaxPerAdmin, or the
// org InviteMaxPerOrg, invite mails within InviteWindow.
func (s *Service) countInvite(ctx context.Context, tx db.Querier, orgID, by string, now time.Time) error {
	since := now.Add(-s.cfg.InviteWindow)
	// One lock per org: the admin's mails are the org's too.
	if err := s.lockKey(ctx, tx, "invite org\x00"+orgID); err != nil {
		return err
	}
	var byOrg, byAdmin int
	var oldestOrg, oldestAdmin db.NullTime
	err := tx.QueryRow(ctx, `SELECT COUNT(*), MIN(sent_at), COUNT(CASE WHEN sent_by = $2 THEN 1 END), MIN(CASE WHEN sent_by = $2 THEN sent_at END)
		FROM invite_sends WHERE org_id = $1 AND sent_at > $3`, orgID, by, since).Scan(&byOrg, &oldestOrg, &byAdmin, &oldestAdmin)
	if err != nil {
		return fmt.Errorf("read invite_sends: %w", err)
	}
	switch {
	case byAdmin >= s.cfg.InviteMaxPerAdmin:
		return s.limitHeld(now, oldestAdmin.Time, s.cfg.InviteWindow, fmt.Sprintf("you have sent %d invites within %s, the limit", byAdmin, s.cfg.InviteWindow))
	case byOrg >= s.cfg.InviteMaxPerOrg:
		return s.limitHeld(now, oldestOrg.Time, s.cfg.InviteWindow, fmt.Sprintf("your organization's admins have sent %d invites within %s, the limit", byOrg, s.cfg.InviteWindow))
	}
	if _, err := tx.Exec(ctx, `DELETE FROM invite_sends WHERE org_id = $1 AND sent_at <= $2`, orgID, since); err != nil {
		return fmt.Errorf("delete from invite_sends: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO invite_sends (org_id, sent_by, sent_at) VALUES ($1, $2, $3)`, orgID, by, now); err != nil {
		return fmt.Errorf("insert into invite_sends: %w", err)
	}
	return nil
}

// PendingInvite reports, inside tx, whether userID or email has an invite
// waiting in orgID.
func PendingInvite(ctx context.Context, tx db.Querier, orgID, userID, email string) (bool, error) {
	var n int
	err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM invites WHERE org_id = $1 AND (user_id = $2 OR email = $3)`, orgID, userID, email).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("read invites: %w", err)
	}
	return n > 0, nil
}

// ClaimInvite deletes, inside tx, the live invite whose link token is raw,
// and returns it: the link works once. The orgs package creates the member
// in the same transaction.
//
// Returns ENotFound for a link that does not work (see deadLink).
func ClaimInvite(ctx context.Context, tx db.Querier, raw string, now time.Time) (*Invite, error) {
	if !WellFormed(raw) {
		return nil, deadInvite()
	}
	inv, err := scanInvite(tx.QueryRow(ctx, `DELETE FROM invites WHERE token_hash = $1 AND expires_at > $2 RETURNING `+inviteColumns, HashToken(raw), now))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, deadInvite()
	}
	if err != nil {
		return nil, fmt.Errorf("delete from invites: %w", err)
	}
	return inv, nil
}

func deadInvite() error {
	return deadLink("invite", "ask your org admin to send you a new invite")
}

// InviteByLink returns the live invite whose link token is raw, for the
// page where the person chooses their password.
//
// Returns ENotFound for a link that does not work.
func (s *Service) InviteByLink(ctx context.Context, raw string) (*Invite, error) {
	// A secret found by its hash names the org it belongs to.
	ctx = ctalk.AsOperator(ctx, "invite link lookup by hash")
	if !WellFormed(raw) {
		return nil, deadInvite()
	}
	inv, err := scanInvite(s.db.QueryRow(ctx, `SELECT `+inviteColumns+` FROM invites WHERE token_hash = $1 AND expires_at > $2`, HashToken(raw), s.db.Now()))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, deadInvite()
	}
	if err != nil {
		return nil, fmt.Errorf("read invites: %w", err)
	}
	return inv, nil
}

// Invites lists the invites of orgID not yet accepted, expired ones
// included, newest first. The caller must have been authorized as an admin
// of orgID.
//
// Returns only the database's errors.
func (s *Service) Invites(ctx context.Context, orgID string) ([]*Invite, error) {
	rows, err := s.db.Query(ctx, `SELECT `+inviteColumns+` FROM invites WHERE org_id = $1 ORDER BY created_at DESC, user_id`, orgID)
	if err != nil {
		return nil, fmt.Errorf("read invites: %w", err)
	}
	defer rows.Close()
	out, now := []*Invite{}, s.db.Now()
	for rows.Next() {
		inv, err := scanInvite(rows)
		if err != nil {
			return nil, err
		}
		inv.Expired = !now.Before(inv.ExpiresAt)
		out = append(out, inv)
	}
	return out, rows.Err()
}

// RenewInvite gives the invite of userID in the caller's org a new link
// token, valid for InviteTTL from now, and returns it with the invite: the
// earlier link stops working. The resend counts against the limits of the
// caller and of their org, as CreateInvite's invite does. The caller must
// have been authorized as an admin of their org.
//
// Returns EInvalid for a malformed id, ENotFound when no invite of userID
// waits, ERateLimited (see countInvite).
func (s *Service) RenewInvite(ctx context.Context, c ctalk.Caller, userID string) (raw string, inv *Invite, err error) {
	if userID, err = ctalk.ParseID("user_id", userID); err != nil {
		return "", nil, err
	}
	raw, hash := NewToken()
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		inv, err = scanInvite(tx.QueryRow(ctx, `UPDATE invites SET token_hash = $1, sent_at = $2, expires_at = $3 WHERE org_id = $4 AND user_id = $5 RETURNING `+inviteColumns,
			hash, now, now.Add(InviteTTL), c.OrgID, userID))
		if errors.Is(err, sql.ErrNoRows) {
			return NoInvite(userID)
		}
		if err != nil {
			return fmt.Errorf("update invites: %w", err)
		}
		return s.countInvite(ctx, tx, c.OrgID, c.UserID, now)
	})
	if err != nil {
		return "", nil, err
	}
	return raw, inv, nil
}

// RevokeInvite deletes the invite of userID in orgID: its link stops
// working. The caller must have been authorized as an admin of orgID.
//
// Returns EInvalid for a malformed id, ENotFound when no invite of userID
// waits.
func (s *Service) RevokeInvite(ctx context.Context, orgID, userID string) error {
	userID, err := ctalk.ParseID("user_id", userID)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx db.Querier) error {
		res, err := tx.Exec(ctx, `DELETE FROM invites WHERE org_id = $1 AND user_id = $2`, orgID, userID)
		if err != nil {
			return fmt.Errorf("delete from invites: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return NoInvite(userID)
		}
		return nil
	})
}

// WithdrawUnsentInvite deletes the invite of userID whose first mail could
// not be sent, only while its link is still raw's: not one that a concurrent
// resend gave a new link. Withdrawing an invite that is gone already is not
// an error.
//
// Returns only the database's errors.
func (s *Service) WithdrawUnsentInvite(ctx context.Context, orgID, userID, raw string) error {
	return s.db.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, `DELETE FROM invites WHERE org_id = $1 AND user_id = $2 AND token_hash = $3`, orgID, userID, HashToken(raw))
		if err != nil {
			return fmt.Errorf("delete from invites: %w", err)
		}
		return nil
	})
}

// NoInvite is the error for a user id no invite waits for in the caller's
// org.
func NoInvite(userID string) error {
	return ctalk.Errorf(ctalk.ENotFound, "no invite of %q waits in your organization; the admin page lists those that do", userID)
}
