package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// RemovePasskey removes passkey id of the person of sess, and returns it.
// It needs a fresh verification: a passkey verification in this session
// within PasskeyFresh, or, for someone removing their only passkey, their
// password (checked under the rules of Login). A passkey still waiting for
// confirmation signs in and verifies nothing: removing it needs only the
// session.
//
// Returns ENotFound for a passkey that is not theirs, EForbidden when the
// verification is missing, the errors of CheckPassword.
func (s *Service) RemovePasskey(ctx context.Context, sess *Session, id, password, clientIP string) (*Passkey, error) {
	keys, err := s.Passkeys(ctx, sess.OrgID, sess.UserID)
	if err != nil {
		return nil, err
	}
	var (
		found     *Passkey
		confirmed int
	)
	for i, k := range keys {
		if k.ID == id {
			found = &keys[i]
		}
		if !k.Pending {
			confirmed++
		}
	}
	if found == nil {
		return nil, ctalk.Errorf(ctalk.ENotFound, "you have no passkey with that id; your profile lists the ones you have")
	}
	switch {
	case found.Pending, sess.PasskeyVerifiedRecently(s.db.Now()):
	case confirmed == 1 && password != "":
		if _, err := s.CheckPassword(ctx, sess.OrgID, sess.UserID, password, clientIP); err != nil {
			return nil, err
		}
	case confirmed == 1:
		return nil, ctalk.Errorf(ctalk.EForbidden, "removing a passkey needs a fresh verification: type your password, or verify with this passkey first")
	default:
		return nil, ctalk.Errorf(ctalk.EForbidden, "removing a passkey needs a fresh verification: verify with one of your passkeys first")
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		ok, err := changedOne(tx.Exec(ctx, `DELETE FROM passkeys WHERE id = $1 AND org_id = $2 AND user_id = $3`, id, sess.OrgID, sess.UserID))
		if err != nil {
			return fmt.Errorf("delete from passkeys: %w", err)
		}
		if !ok {
			return ctalk.Errorf(ctalk.ENotFound, "that passkey was removed already")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return found, nil
}

// PendingPasskey is a passkey waiting for confirmation, as the page its
// mailed link opens shows it.
type PendingPasskey struct {
	OrgID, UserID string
	Passkey
}

// errConfirmGone refuses a confirmation link that is unknown, used or
// expired.
var errConfirmGone = ctalk.Errorf(ctalk.ENotFound, "this link does not confirm any passkey: it was used already, it expired (links work for 24 hours), or the passkey was removed. Add the passkey again on your profile for a new link")

// PasskeyByLink returns the passkey that the confirmation link's token raw
// confirms, without confirming it.
//
// Returns ENotFound for a link that is unknown, used or expired.
func (s *Service) PasskeyByLink(ctx context.Context, raw string) (*PendingPasskey, error) {
	if !WellFormed(raw) {
		return nil, errConfirmGone
	}
	p := &PendingPasskey{}
	// A link found by the hash of its secret names the org it belongs to.
	err := s.db.QueryRow(ctalk.AsOperator(ctx, "passkey confirmation link lookup by hash"), `SELECT p.org_id, p.user_id, p.id, p.name, p.created_at FROM passkeys p
		JOIN users u ON u.org_id = p.org_id AND u.id = p.user_id AND u.removed_at IS NULL
		WHERE p.confirm_hash = $1 AND p.confirm_expires_at > $2`, HashToken(raw), s.db.Now()).Scan(&p.OrgID, &p.UserID, &p.ID, &p.Name, &p.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errConfirmGone
	}
	if err != nil {
		return nil, fmt.Errorf("read passkeys: %w", err)
	}
	p.Pending = true
	return p, nil
}

// ConfirmPasskey confirms, once, the passkey that the mailed link's token
// raw names: from then on it signs in and verifies.
//
// Returns ENotFound for a link that is unknown, used or expired.
func (s *Service) ConfirmPasskey(ctx context.Context, raw string) (*PendingPasskey, error) {
	p, err := s.PasskeyByLink(ctx, raw)
	if err != nil {
		return nil, err
	}
	// The confirmation acts in the org of the link's passkey.
	ctx = ctalk.WithOrg(ctx, p.OrgID)
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		ok, err := changedOne(tx.Exec(ctx, `UPDATE passkeys SET confirm_hash = NULL, confirm_expires_at = NULL WHERE confirm_hash = $1 AND confirm_expires_at > $2`,
			HashToken(raw), s.db.Now()))
		if err != nil {
			return fmt.Errorf("update passkeys: %w", err)
		}
		if !ok {
			return errConfirmGone
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.Pending = false
	return p, nil
}

// ApprovePasskey confirms, as the admin of admin's session, the passkey id
// of userID that waits for confirmation: the factor a member who has no
// passkey yet is given where no link can be mailed to them. The admin
// must have verified with their own passkey in this session within
// PasskeyFresh, and may not approve their own. The caller must have
// authorized admin as an admin of their org.
//
// Returns EForbidden for the admin's own passkey or without that
// verification, ENotFound for a passkey of no member's of the org or one
// that waits for nothing.
func (s *Service) ApprovePasskey(ctx context.Context, admin *Session, userID, id string) (*Passkey, error) {
	if userID == admin.UserID {
		return nil, ctalk.Errorf(ctalk.EForbidden, "a passkey of your own is confirmed by the link mailed to you, or by another admin; an admin cannot approve their own")
	}
	if !admin.PasskeyVerifiedRecently(s.db.Now()) {
		return nil, ctalk.Errorf(ctalk.EForbidden, "approving a member's passkey needs a fresh verification with a passkey of yours")
	}
	pk, err := s.confirmWaiting(ctx, admin.OrgID, userID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ctalk.Errorf(ctalk.ENotFound, "this member has no passkey with that id waiting for approval; their member page lists those that do")
	}
	return pk, err
}

// confirmWaiting confirms the passkey id of userID of orgID that waits for
// confirmation, and returns it; sql.ErrNoRows when no such passkey waits.
func (s *Service) confirmWaiting(ctx context.Context, orgID, userID, id string) (*Passkey, error) {
	pk := &Passkey{ID: id}
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		err := tx.QueryRow(ctx, `UPDATE passkeys SET confirm_hash = NULL, confirm_expires_at = NULL
			WHERE id = $1 AND org_id = $2 AND user_id = $3 AND confirm_hash IS NOT NULL RETURNING name, created_at`,
			id, orgID, userID).Scan(&pk.Name, &pk.CreatedAt)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("update passkeys: %w", err)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return pk, nil
}

// WaitingPasskeys lists the passkeys of every org that wait for
// confirmation, oldest first, with whose they are: what the server's
// operator may confirm (ConfirmWaitingPasskey) where neither a mailed link
// nor an admin with a passkey can, as in an org that approves by passkey
// on a server that sends no email once no admin has a passkey left.
//
// Returns only the database's errors.
func (s *Service) WaitingPasskeys(ctx context.Context) ([]PendingPasskey, error) {
	rows, err := s.db.Query(ctx, `SELECT org_id, user_id, id, name, created_at FROM passkeys WHERE confirm_hash IS NOT NULL ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("read waiting passkeys: %w", err)
	}
	defer rows.Close()
	var out []PendingPasskey
	for rows.Next() {
		p := PendingPasskey{Passkey: Passkey{Pending: true}}
		if err := rows.Scan(&p.OrgID, &p.UserID, &p.ID, &p.Name, &p.CreatedAt); err != nil {
			return nil, fmt.Errorf("read waiting passkeys: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read waiting passkeys: %w", err)
	}
	return out, nil
}

// ConfirmWaitingPasskey confirms, as the server's operator (someone with
// its shell and its database, a factor no agent of a member holds), the
// passkey id that waits for confirmation, in whichever org, and returns
// it with whose it is: the last resort of WaitingPasskeys. Telling the
// person is the caller's.
//
// Returns ENotFound for an id that waits for nothing.
func (s *Service) ConfirmWaitingPasskey(ctx context.Context, id string) (*PendingPasskey, error) {
	notWaiting := ctalk.Errorf(ctalk.ENotFound, "no passkey with the id %q waits for confirmation; \"ctalk passkeys waiting\" lists those that do", ctalk.Shorten(id, 60))
	p := &PendingPasskey{}
	err := s.db.QueryRow(ctx, `SELECT org_id, user_id FROM passkeys WHERE id = $1 AND confirm_hash IS NOT NULL`, id).Scan(&p.OrgID, &p.UserID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notWaiting
	}
	if err != nil {
		return nil, fmt.Errorf("read passkey: %w", err)
	}
	pk, err := s.confirmWaiting(ctx, p.OrgID, p.UserID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notWaiting
	}
	if err != nil {
		return nil, err
	}
	p.Passkey = *pk
	return p, nil
}
