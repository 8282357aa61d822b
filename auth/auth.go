// Package auth checks credentials and issues, checks and revokes the
// org-scoped tokens every identified tool call carries. It owns passwords,
// tokens and login throttling.
package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Role values.
const (
	RoleMember = "member"
	RoleAdmin  = "admin"
)

// Config holds the security settings of the service.
type Config struct {
	BcryptCost int
	// TokenTTL is a token's absolute lifetime; IdleTTL ends it early when unused.
	TokenTTL time.Duration
	IdleTTL  time.Duration
	// MaxFailures within FailureWindow locks an account's logins until the
	// oldest failure leaves the window.
	MaxFailures   int
	FailureWindow time.Duration
	// IPRate and IPBurst bound login attempts per client address on this replica.
	IPRate  float64
	IPBurst int
}

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{
		BcryptCost:    12,
		TokenTTL:      720 * time.Hour,
		IdleTTL:       168 * time.Hour,
		MaxFailures:   10,
		FailureWindow: 15 * time.Minute,
		IPRate:        1,
		IPBurst:       30,
	}
}

// Session is the identity a token stands for.
type Session struct {
	OrgID     string
	UserID    string
	Role      string
	TokenHash string
	ExpiresAt time.Time
	// GrantID is set when the token is an OAuth access token: the grant
	// that logout revokes.
	GrantID string
}

// IsAdmin reports whether the session's user administers its org.
func (s *Session) IsAdmin() bool { return s != nil && s.Role == RoleAdmin }

// Service checks credentials and tokens.
type Service struct {
	db        *db.DB
	cfg       Config
	dummyHash []byte
	ips       *ipLimiter
}

// NewService returns a Service over d.
func NewService(d *db.DB, cfg Config) (*Service, error) {
	dummy, err := bcrypt.GenerateFromPassword([]byte("ctalk-timing-equalizer"), cfg.BcryptCost)
	if err != nil {
		return nil, fmt.Errorf("bcrypt cost %d: %w", cfg.BcryptCost, err)
	}
	return &Service{db: d, cfg: cfg, dummyHash: dummy, ips: newIPLimiter(cfg.IPRate, cfg.IPBurst)}, nil
}

// badLogin is the one message for an unknown org, an unknown user and a
// wrong password, so that a caller cannot tell which accounts exist.
const badLogin = "login failed: the org id, user id or password is wrong; check them, or ask your org admin to add you with register_user"

// adminAccount is the throttling key of an org's admin password.
const adminAccount = "*admin"

// Login checks a user's password and issues a new token. clientIP is used for
// the per-address limit.
//
// Returns EUnauthorized for bad credentials, ERateLimited when the account or
// the address has failed too often, EInvalid for malformed ids.
func (s *Service) Login(ctx context.Context, orgID, userID, password, clientIP string) (token string, sess *Session, err error) {
	if sess, err = s.CheckPassword(ctx, orgID, userID, password, clientIP); err != nil {
		return "", nil, err
	}
	orgID, userID = sess.OrgID, sess.UserID
	raw, tokenHash := NewToken()
	sess.TokenHash = tokenHash
	err = s.db.Tx(ctx, func(tx *sql.Tx) error {
		now := s.db.Now()
		sess.ExpiresAt = now.Add(s.cfg.TokenTTL)
		if _, err := tx.ExecContext(ctx, `DELETE FROM login_failures WHERE org_id = $1 AND user_id = $2`, orgID, userID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO tokens (hash, org_id, user_id, kind, created_at, last_used_at, expires_at) VALUES ($1, $2, $3, 'login', $4, $4, $5)`,
			tokenHash, orgID, userID, now, sess.ExpiresAt)
		return err
	})
	if err != nil {
		return "", nil, err
	}
	return raw, sess, nil
}

// CheckPassword checks a user's password under the rules of Login (the
// per-address limit, the account lockout, the same time for unknown users)
// without issuing a token, and returns whom they identify, with no token
// hash or expiry. The sign-in page uses it before starting a browser session.
//
// Returns EUnauthorized for bad credentials, ERateLimited when the account or
// the address has failed too often, EInvalid for malformed ids.
func (s *Service) CheckPassword(ctx context.Context, orgID, userID, password, clientIP string) (*Session, error) {
	if err := s.ips.allow(clientIP); err != nil {
		return nil, err
	}
	orgID, err := ctalk.ParseID("org_id", orgID)
	if err != nil {
		return nil, err
	}
	if userID, err = ctalk.ParseID("user_id", userID); err != nil {
		return nil, err
	}
	if err := s.checkThrottle(ctx, orgID, userID); err != nil {
		return nil, err
	}
	var hash, role string
	err = s.db.QueryRowContext(ctx, `SELECT password_hash, role FROM users WHERE org_id = $1 AND id = $2`, orgID, userID).Scan(&hash, &role)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, db.Translate(err)
	}
	if !s.checkPassword(hash, password) {
		if err := s.recordFailure(ctx, orgID, userID); err != nil {
			return nil, err
		}
		return nil, ctalk.Errorf(ctalk.EUnauthorized, badLogin)
	}
	return &Session{OrgID: orgID, UserID: userID, Role: role}, nil
}

// VerifyAdminPassword checks an org's admin password, with the same
// throttling as logins.
//
// Returns ENotFound for an unknown org, EUnauthorized for a wrong password,
// ERateLimited after too many failures.
func (s *Service) VerifyAdminPassword(ctx context.Context, orgID, password string) error {
	if err := s.checkThrottle(ctx, orgID, adminAccount); err != nil {
		return err
	}
	var hash string
	err := s.db.QueryRowContext(ctx, `SELECT admin_password_hash FROM orgs WHERE id = $1`, orgID).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		s.checkPassword("", password)
		return ctalk.Errorf(ctalk.ENotFound, "organization %q not found; check org_id, or create it with register_organization", orgID)
	}
	if err != nil {
		return db.Translate(err)
	}
	if !s.checkPassword(hash, password) {
		if err := s.recordFailure(ctx, orgID, adminAccount); err != nil {
			return err
		}
		return ctalk.Errorf(ctalk.EUnauthorized, "the admin password of organization %q is wrong", orgID)
	}
	return nil
}

// Authenticate returns the session of a token. Expiry and revocation take
// effect on the very next call because every call comes here.
//
// Returns EUnauthorized for an unknown, malformed, expired or revoked token.
func (s *Service) Authenticate(ctx context.Context, raw string) (*Session, error) {
	if !WellFormed(raw) {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the auth token is not a ctalk token (they start with %q); log in again with login", TokenPrefix)
	}
	hash := HashToken(raw)
	now := s.db.Now()
	var (
		sess              = Session{TokenHash: hash}
		lastUsed, expires time.Time
		revoked           sql.NullTime
	)
	err := s.db.QueryRowContext(ctx, `
		SELECT t.org_id, t.user_id, u.role, t.last_used_at, t.expires_at, t.revoked_at
		FROM tokens t JOIN users u ON u.org_id = t.org_id AND u.id = t.user_id
		WHERE t.hash = $1`, hash).Scan(&sess.OrgID, &sess.UserID, &sess.Role, &lastUsed, &expires, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the auth token is not valid; log in again with login")
	}
	if err != nil {
		return nil, db.Translate(err)
	}
	switch {
	case revoked.Valid:
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the auth token was revoked (logged out); log in again with login")
	case !now.Before(expires):
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the auth token expired at %s; log in again with login", expires.UTC().Format(time.RFC3339))
	case !now.Before(lastUsed.Add(s.cfg.IdleTTL)):
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the auth token expired after %s unused; log in again with login", s.cfg.IdleTTL)
	}
	sess.ExpiresAt = expires
	// Refreshing last use at most once a minute keeps idle expiry accurate to
	// a minute without a write on every call.
	if now.Sub(lastUsed) > time.Minute {
		err := s.db.Write(ctx, func() error {
			_, err := s.db.ExecContext(ctx, `UPDATE tokens SET last_used_at = $1 WHERE hash = $2`, now, hash)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return &sess, nil
}

// Logout revokes the token of sess.
func (s *Service) Logout(ctx context.Context, sess *Session) error {
	return s.db.Write(ctx, func() error {
		_, err := s.db.ExecContext(ctx, `UPDATE tokens SET revoked_at = $1 WHERE hash = $2 AND revoked_at IS NULL`, s.db.Now(), sess.TokenHash)
		return err
	})
}

// checkThrottle refuses an account that has failed MaxFailures times within
// FailureWindow. Failures are counted in the database so the lock holds
// across replicas.
func (s *Service) checkThrottle(ctx context.Context, orgID, account string) error {
	now := s.db.Now()
	var (
		n      int
		oldest sql.NullTime
	)
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), MIN(failed_at) FROM login_failures WHERE org_id = $1 AND user_id = $2 AND failed_at > $3`,
		orgID, account, now.Add(-s.cfg.FailureWindow)).Scan(&n, (*db.NullTime)(&oldest))
	if err != nil {
		return db.Translate(err)
	}
	if n < s.cfg.MaxFailures {
		return nil
	}
	retry := oldest.Time.Add(s.cfg.FailureWindow)
	wait := retry.Sub(now).Round(time.Second)
	return &ctalk.Error{
		Code:       ctalk.ERateLimited,
		Message:    fmt.Sprintf("too many attempts, retry after %s (in %s)", retry.UTC().Format(time.RFC3339), wait),
		RetryAfter: wait,
	}
}

// recordFailure counts a failed attempt and forgets those outside the window.
func (s *Service) recordFailure(ctx context.Context, orgID, account string) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		now := s.db.Now()
		if _, err := tx.ExecContext(ctx, `DELETE FROM login_failures WHERE org_id = $1 AND user_id = $2 AND failed_at <= $3`, orgID, account, now.Add(-s.cfg.FailureWindow)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO login_failures (org_id, user_id, failed_at) VALUES ($1, $2, $3)`, orgID, account, now)
		return err
	})
}
