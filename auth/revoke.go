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

// RevokeTokens revokes, inside tx, every live credential of userID in orgID
// (login and personal tokens, OAuth grants with their access and refresh
// tokens, browser sessions) except the one keep was authenticated with (none
// when keep is nil), and returns how many it revoked. It is for services
// that revoke as part of a larger change, such as removing a member; they
// call Service.Revoked once tx has committed, so that the credentials stop
// working on the very next call on every replica (see TokenCacheTTL).
func RevokeTokens(ctx context.Context, tx db.Querier, orgID, userID string, keep *Session, now time.Time) (int, error) {
	var keepHash, keepGrant string
	if keep != nil {
		keepHash, keepGrant = keep.TokenHash, keep.GrantID
	}
	total := 0
	for _, q := range []struct{ op, sql, keep string }{
		{"update tokens", `UPDATE tokens SET revoked_at = $1 WHERE org_id = $2 AND user_id = $3 AND revoked_at IS NULL AND hash <> $4`, keepHash},
		{"update oauth_grants", `UPDATE oauth_grants SET revoked_at = $1 WHERE org_id = $2 AND user_id = $3 AND revoked_at IS NULL AND id <> $4`, keepGrant},
		{"update web_sessions", `UPDATE web_sessions SET revoked_at = $1 WHERE org_id = $2 AND user_id = $3 AND revoked_at IS NULL AND hash <> $4`, keepHash},
	} {
		res, err := tx.Exec(ctx, q.sql, now, orgID, userID, q.keep)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", q.op, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		total += int(n)
	}
	return total, nil
}

// RemoveCredentials ends, inside tx, every way the user orgID/userID had
// to act: their password is cleared, so that login fails for a former
// member exactly as for an unknown user, and every credential is revoked
// (see RevokeTokens, whose count it returns). The orgs package calls it
// when it removes a member, and Service.Revoked once tx has committed.
func RemoveCredentials(ctx context.Context, tx db.Querier, orgID, userID string, now time.Time) (int, error) {
	if _, err := StorePassword(ctx, tx, orgID, userID, ""); err != nil {
		return 0, err
	}
	return RevokeTokens(ctx, tx, orgID, userID, nil, now)
}

// RevokeUserTokens revokes every token of a current member of orgID, and
// returns how many were live. The caller must have been authorized as an
// admin of orgID.
//
// Returns EInvalid for a malformed id, ENotFound when userID is not a
// current member of orgID.
func (s *Service) RevokeUserTokens(ctx context.Context, orgID, userID string) (int, error) {
	userID, err := ctalk.ParseID("user_id", userID)
	if err != nil {
		return 0, err
	}
	var n int
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM users WHERE org_id = $1 AND id = $2 AND removed_at IS NULL`, orgID, userID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return NotFoundUser(userID)
		}
		if err != nil {
			return fmt.Errorf("read users: %w", err)
		}
		n, err = RevokeTokens(ctx, tx, orgID, userID, nil, s.db.Now())
		return err
	})
	if err != nil {
		return 0, err
	}
	s.Revoked(ctx, orgID, userID)
	return n, nil
}

// ChangePassword replaces the password of sess's user after checking the
// current one, and revokes every other token of that user; the token of sess
// keeps working. Wrong current passwords count as failed logins of the
// account, so guessing through this call is throttled like login.
//
// Returns EInvalid for a new password that breaks the length rules,
// EUnauthorized for a wrong current password, ERateLimited after too many
// failures, EConflict when the password changed meanwhile, ENotFound when the
// user was removed.
func (s *Service) ChangePassword(ctx context.Context, sess *Session, current, next string) (revoked int, err error) {
	hash, err := s.HashPassword("new_password", next, MinUserPasswordLen)
	if err != nil {
		return 0, err
	}
	addr := addressKey(ClientAddr(ctx))
	a, err := s.reserveAttempt(ctx, sess.OrgID, sess.UserID, addr, false)
	if err != nil {
		return 0, err
	}
	defer a.end(ctx)
	var old string
	err = s.db.QueryRow(ctx, `SELECT password_hash FROM users WHERE org_id = $1 AND id = $2 AND removed_at IS NULL`, sess.OrgID, sess.UserID).Scan(&old)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, NotFoundUser(sess.UserID)
	}
	if err != nil {
		return 0, fmt.Errorf("read users: %w", err)
	}
	if !s.checkPassword(old, current) {
		// The attempt was counted before the check and stays counted.
		return 0, ctalk.Errorf(ctalk.EUnauthorized, "current_password is wrong; your password is unchanged and your token still works")
	}
	err = a.cleared(s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		// Only over the hash just checked: a concurrent change wins, and this
		// one must be retried with the password it set.
		res, err := tx.Exec(ctx, `UPDATE users SET password_hash = $1 WHERE org_id = $2 AND id = $3 AND password_hash = $4 AND removed_at IS NULL`,
			hash, sess.OrgID, sess.UserID, old)
		if err != nil {
			return fmt.Errorf("update users: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ctalk.Errorf(ctalk.EConflict, "your password was changed by another call meanwhile; retry with the current password")
		}
		if err := a.clear(ctx, tx); err != nil {
			return err
		}
		revoked, err = RevokeTokens(ctx, tx, sess.OrgID, sess.UserID, sess, now)
		return err
	}))
	if err != nil {
		return 0, err
	}
	s.Revoked(ctx, sess.OrgID, sess.UserID)
	return revoked, nil
}

// ResetPassword sets a new password for a current member of orgID and
// revokes all of their tokens. The caller must have been authorized as an
// admin of orgID.
//
// Returns EInvalid, ENotFound when userID is not a current member of orgID.
func (s *Service) ResetPassword(ctx context.Context, orgID, userID, next string) (revoked int, err error) {
	if userID, err = ctalk.ParseID("user_id", userID); err != nil {
		return 0, err
	}
	hash, err := s.HashPassword("new_password", next, MinUserPasswordLen)
	if err != nil {
		return 0, err
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		revoked, err = setPasswordRevoking(ctx, tx, orgID, userID, hash, s.db.Now())
		return err
	})
	if err != nil {
		return 0, err
	}
	s.Revoked(ctx, orgID, userID)
	return revoked, nil
}

// setPasswordRevoking stores, inside tx, the password hash of a current
// member and revokes every credential of theirs: a reset, by their admin or
// by a mailed link. The caller calls Service.Revoked once tx has committed.
//
// Returns ENotFound when userID is not a current member of orgID.
func setPasswordRevoking(ctx context.Context, tx db.Querier, orgID, userID, hash string, now time.Time) (int, error) {
	res, err := tx.Exec(ctx, `UPDATE users SET password_hash = $1 WHERE org_id = $2 AND id = $3 AND removed_at IS NULL`,
		hash, orgID, userID)
	if err != nil {
		return 0, fmt.Errorf("update users: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return 0, NotFoundUser(userID)
	}
	return RevokeTokens(ctx, tx, orgID, userID, nil, now)
}

// ChangeAdminPassword replaces the admin password of orgID. The caller must
// have been authorized as an admin of orgID.
//
// Returns EInvalid for a password that breaks the length rules, ENotFound.
func (s *Service) ChangeAdminPassword(ctx context.Context, orgID, next string) error {
	hash, err := s.HashPassword("new_admin_password", next, MinAdminPasswordLen)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx db.Querier) error {
		ok, err := StoreAdminPassword(ctx, tx, orgID, hash)
		if err == nil && !ok {
			return ctalk.Errorf(ctalk.ENotFound, "organization %q not found; check org_id", orgID)
		}
		return err
	})
}

// NotFoundUser is the error for a user id that is not a current member of
// the caller's org, whether it never existed, was removed, or exists in
// another org.
func NotFoundUser(userID string) error {
	return ctalk.Errorf(ctalk.ENotFound, "user %q not found in your organization; list_users shows who is there", userID)
}
