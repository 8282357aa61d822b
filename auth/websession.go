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

// Lifetimes of a browser session: absolute, and idle.
const (
	WebSessionTTL     = 12 * time.Hour
	WebSessionIdleTTL = 2 * time.Hour
)

// webSessionPrefix starts a browser session's cookie value, so that it can
// never pass for an agent's token.
const webSessionPrefix = "ctalkweb_"

// SignIn checks a person's password under the rules of Login and starts a
// browser session, returned once as raw (the cookie value) and stored only as
// its hash.
//
// Returns the errors of CheckPassword, and the refusal of the SignInGate
// (DoorWeb).
func (s *Service) SignIn(ctx context.Context, orgID, userID, password, clientIP string) (raw string, sess *Session, err error) {
	if sess, err = s.CheckPassword(ctx, orgID, userID, password, clientIP); err != nil {
		return "", nil, err
	}
	if err := s.admit(ctx, sess.OrgID, sess.UserID, DoorWeb); err != nil {
		return "", nil, err
	}
	if raw, err = s.StartWebSession(ctx, sess); err != nil {
		return "", nil, err
	}
	return raw, sess, nil
}

// StartWebSession starts a browser session for a person whose identity was
// just proven (by password, through their organization's identity
// provider, or by creating their organization), filling in
// sess's hash and expiry.
//
// Returns EForbidden for a member (not an admin) of an org whose deletion
// is scheduled, or the database's errors.
func (s *Service) StartWebSession(ctx context.Context, sess *Session) (string, error) {
	if err := s.refuseIfClosing(ctx, sess.OrgID, sess.IsAdmin()); err != nil {
		return "", err
	}
	raw, _ := NewToken()
	raw = webSessionPrefix + raw[len(TokenPrefix):]
	sess.TokenHash = HashToken(raw)
	if sess.SignedInWith != signedInPasskey && sess.SignedInWith != SignedInSSO {
		sess.SignedInWith = signedInPassword
	}
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		sess.ExpiresAt = now.Add(WebSessionTTL)
		// A session begun with a passkey holds that verification.
		var passkeyAt sql.NullTime
		if sess.SignedInWith == signedInPasskey {
			sess.PasskeyAt, passkeyAt = now, sql.NullTime{Time: now, Valid: true}
		}
		_, err := tx.Exec(ctx, `INSERT INTO web_sessions (hash, org_id, user_id, created_at, last_used_at, expires_at, signed_in_with, passkey_at) VALUES ($1, $2, $3, $4, $4, $5, $6, $7)`,
			sess.TokenHash, sess.OrgID, sess.UserID, now, sess.ExpiresAt, sess.SignedInWith, passkeyAt)
		if err != nil {
			return fmt.Errorf("insert into web_sessions: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return raw, nil
}

// WebSession returns the person a browser session cookie stands for.
//
// Returns EUnauthorized for an unknown, expired, idle or ended session.
func (s *Service) WebSession(ctx context.Context, raw string) (*Session, error) {
	if len(raw) != tokenLen-len(TokenPrefix)+len(webSessionPrefix) || raw[:len(webSessionPrefix)] != webSessionPrefix {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, webSessionEnded)
	}
	hash := HashToken(raw)
	now := s.db.Now()
	sess, lastUsed, err := s.webSession(ctx, hash, now)
	if err != nil {
		return nil, err
	}
	if err := s.touchCredential(ctalk.WithOrg(ctx, sess.OrgID), webSessionsTable, hash, lastUsed, now); err != nil {
		return nil, err
	}
	return sess, nil
}

// StillSignedIn checks that a browser session returned by WebSession has
// not ended since, without counting the check as a use of the session: a
// page left open does not keep its session from going idle.
//
// Returns EUnauthorized once the session has ended.
func (s *Service) StillSignedIn(ctx context.Context, sess *Session) error {
	_, _, err := s.webSession(ctx, sess.TokenHash, s.db.Now())
	return err
}

const webSessionEnded = "your browser session has ended; sign in again"

// webSession reads the live session of a hash and when it was last used.
func (s *Service) webSession(ctx context.Context, hash string, now time.Time) (*Session, time.Time, error) {
	var (
		sess              = Session{TokenHash: hash}
		lastUsed, expires time.Time
		revoked, passkey  sql.NullTime
	)
	// The session's org is what this finds out.
	err := s.db.QueryRow(ctalk.AsOperator(ctx, "web session lookup by hash"), `
		SELECT w.org_id, w.user_id, u.role, w.last_used_at, w.expires_at, w.revoked_at, w.passkey_at, w.signed_in_with
		FROM web_sessions w JOIN users u ON u.org_id = w.org_id AND u.id = w.user_id AND u.removed_at IS NULL
		JOIN orgs o ON o.id = w.org_id AND (o.deletion_due_at IS NULL OR u.role = 'admin')
		WHERE w.hash = $1`, hash).Scan(&sess.OrgID, &sess.UserID, &sess.Role, &lastUsed, &expires, &revoked, (*db.NullTime)(&passkey), &sess.SignedInWith)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, time.Time{}, ctalk.Errorf(ctalk.EUnauthorized, webSessionEnded)
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read web_sessions: %w", err)
	}
	if revoked.Valid || !now.Before(expires) || !now.Before(lastUsed.Add(WebSessionIdleTTL)) {
		return nil, time.Time{}, ctalk.Errorf(ctalk.EUnauthorized, webSessionEnded)
	}
	sess.ExpiresAt = expires
	sess.PasskeyAt = passkey.Time
	return &sess, lastUsed, nil
}

// EndWebSession signs a browser session out.
//
// Returns only the database's errors: a session ended already is not
// one.
func (s *Service) EndWebSession(ctx context.Context, sess *Session) error {
	return s.revokeCredential(ctx, webSessionsTable, sess.TokenHash)
}
