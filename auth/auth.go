// Package auth checks credentials and issues, checks and revokes the
// org-scoped tokens every identified tool call carries. It owns passwords,
// tokens and login throttling.
package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Config holds the security settings of the service.
type Config struct {
	BcryptCost int
	// TokenTTL is a token's absolute lifetime; IdleTTL ends it early when unused.
	TokenTTL time.Duration
	IdleTTL  time.Duration
	// MaxFailures within FailureWindow from one client address hold back
	// that address's password checks on that account (a user's login or an
	// org's admin password) until the oldest failure leaves the window.
	// AccountMaxFailures, from all addresses together, hold back the
	// account; it is much higher, so that a stranger who guesses from one
	// address cannot lock its owner out.
	MaxFailures        int
	AccountMaxFailures int
	FailureWindow      time.Duration
	// IPRate and IPBurst bound password checks per client address on this
	// replica: logins and admin passwords each have a budget of their own.
	IPRate  float64
	IPBurst int
	// SignupRate and SignupBurst bound register_organization calls per
	// client address on this replica (each hashes a password, and a closed
	// server's calls guess its sign-up secret).
	SignupRate  float64
	SignupBurst int
	// ResetMaxPerAccount "forgot password" requests for one account (named
	// by id or address, existing or not), and ResetMaxPerAddress from one
	// client address, are answered within ResetWindow; more are refused
	// until the oldest leaves it. An existing member is also sent at most
	// ResetMaxPerAccount links within ResetWindow, however asked for.
	ResetMaxPerAccount int
	ResetMaxPerAddress int
	ResetWindow        time.Duration
	// InviteMaxPerAdmin invite mails (invites and resends) by one admin,
	// and InviteMaxPerOrg in one org, are sent within InviteWindow; more
	// are refused until the oldest leaves it.
	InviteMaxPerAdmin int
	InviteMaxPerOrg   int
	InviteWindow      time.Duration
}

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{
		BcryptCost:         12,
		TokenTTL:           720 * time.Hour,
		IdleTTL:            168 * time.Hour,
		MaxFailures:        10,
		AccountMaxFailures: 100,
		FailureWindow:      15 * time.Minute,
		IPRate:             1,
		IPBurst:            30,
		SignupRate:         10.0 / 3600,
		SignupBurst:        10,
		ResetMaxPerAccount: 5,
		ResetMaxPerAddress: 20,
		ResetWindow:        time.Hour,
		InviteMaxPerAdmin:  20,
		InviteMaxPerOrg:    50,
		InviteWindow:       time.Hour,
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
	// Kind is KindLogin or KindPersonal for a token of the tokens table,
	// empty for other credentials.
	Kind string
	// A browser session's last passkey verification (zero for none) and
	// how it was begun ("password" or "passkey").
	PasskeyAt    time.Time
	SignedInWith string
}

// IsAdmin reports whether the session's user administers its org.
func (s *Session) IsAdmin() bool { return s != nil && s.Role == adminRole }

// Caller is who the session's holder is, as every service takes them.
func (s *Session) Caller() ctalk.Caller {
	return ctalk.Caller{OrgID: s.OrgID, UserID: s.UserID, Admin: s.IsAdmin()}
}

// adminRole is the value of orgs.RoleAdmin, which defines the roles: orgs
// imports auth, so auth cannot import it. Tests that log in as an admin
// made with orgs.RoleAdmin and expect IsAdmin keep the two equal.
const adminRole = "admin"

// Service checks credentials and tokens.
type Service struct {
	// onRevoked is the function of OnRevoked.
	onRevoked func(orgID, userID string)
	db        *db.DB
	cfg       Config
	dummyHash []byte
	ips       *ipLimiter
	signups   *ipLimiter
	// nextPrune is when attempts that left the window are next deleted
	// across all accounts, as Unix nanoseconds.
	nextPrune atomic.Int64
	// cache holds recent token checks (see TokenCacheTTL).
	cache *sessionCache
	// afterRead, when set by a test, runs between a token's read and its
	// caching.
	afterRead func()
	// gate is the SignInGate of SetSignInGate, nil for none.
	gate SignInGate
}

// NewService returns a Service over d.
func NewService(d *db.DB, cfg Config) (*Service, error) {
	dummy, err := bcrypt.GenerateFromPassword([]byte("ctalk-timing-equalizer"), cfg.BcryptCost)
	if err != nil {
		return nil, fmt.Errorf("bcrypt cost %d: %w", cfg.BcryptCost, err)
	}
	return &Service{db: d, cfg: cfg, dummyHash: dummy,
		ips:     newIPLimiter(cfg.IPRate, cfg.IPBurst),
		signups: newIPLimiter(cfg.SignupRate, cfg.SignupBurst),
		cache:   newSessionCache(d, TokenCacheTTL),
	}, nil
}

// badLogin is the one message for an unknown org, an unknown user and a
// wrong password, so that a caller cannot tell which accounts exist.
const badLogin = "login failed: the org id, user id or password is wrong; check them, or ask your org admin to add you with register_user"

// adminAccount is the throttling key of an org's admin password.
const adminAccount = "*admin"

// Login checks a user's password and issues a new token, labelled with the
// client's name when ctx carries one (WithClientLabel). clientIP is used
// for the per-address limits.
//
// Returns EUnauthorized for bad credentials, ERateLimited when the account has
// failed too often from this address or from all addresses, or this address
// has tried too often, EInvalid for malformed ids, EForbidden while the
// org's deletion is scheduled, and the refusal of the SignInGate (DoorMCP).
func (s *Service) Login(ctx context.Context, orgID, userID, password, clientIP string) (token string, sess *Session, err error) {
	if err := s.admit(ctx, orgID, userID, DoorMCP); err != nil {
		return "", nil, err
	}
	sess, a, hash, err := s.verifyPassword(ctx, orgID, userID, password, clientIP, "")
	if err != nil {
		return "", nil, err
	}
	defer a.end(ctx)
	if err := s.refuseIfClosing(ctx, sess.OrgID, false); err != nil {
		return "", nil, err
	}
	raw, tokenHash := NewToken()
	sess.TokenHash = tokenHash
	err = a.cleared(s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		sess.ExpiresAt = now.Add(s.cfg.TokenTTL)
		if err := a.clear(ctx, tx); err != nil {
			return err
		}
		// Only while the password just checked is still the user's: a
		// password change, reset or removal that committed after the check
		// must not be outlived by a token issued on the old password.
		res, err := tx.Exec(ctx, `INSERT INTO tokens (hash, org_id, user_id, kind, label, created_at, last_used_at, expires_at)
			SELECT $1, $2, $3, 'login', $7, $4, $4, $5 FROM users WHERE org_id = $2 AND id = $3 AND password_hash = $6 AND removed_at IS NULL`,
			tokenHash, sess.OrgID, sess.UserID, now, sess.ExpiresAt, hash, clientLabel(ctx))
		if err != nil {
			return fmt.Errorf("insert into tokens: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return ctalk.Errorf(ctalk.EUnauthorized, badLogin)
		}
		return nil
	}))
	if err != nil {
		return "", nil, err
	}
	return raw, sess, nil
}

// CheckPassword checks a user's password under the rules of Login (the
// per-address limits, the account lockout, the same time for unknown users)
// without issuing a token, and returns whom they identify, with no token
// hash or expiry. The sign-in page uses it before starting a browser session.
//
// Returns the errors of Login.
func (s *Service) CheckPassword(ctx context.Context, orgID, userID, password, clientIP string) (*Session, error) {
	return s.checkPasswordOn(ctx, orgID, userID, password, clientIP, "")
}

// checkPasswordOn is CheckPassword from a browser that sent the device
// cookie device ("" for none).
func (s *Service) checkPasswordOn(ctx context.Context, orgID, userID, password, clientIP, device string) (*Session, error) {
	sess, a, _, err := s.verifyPassword(ctx, orgID, userID, password, clientIP, device)
	if err != nil {
		return nil, err
	}
	defer a.end(ctx)
	err = a.cleared(s.db.Tx(ctx, func(tx db.Querier) error { return a.clear(ctx, tx) }))
	return sess, err
}

// verifyPassword runs Login's checks up to and including the password
// compare: the per-address limit, the ids, the attempt counted before the
// compare (see reserveAttempt). It returns the session it identifies, the
// attempt that the caller clears and ends, and the password hash that
// matched.
//
// A device cookie of the account (see SignInOnDevice) gives the check the
// cookie's own failure budget instead of the address's, which the account's
// lock does not hold back.
func (s *Service) verifyPassword(ctx context.Context, orgID, userID, password, clientIP, device string) (sess *Session, a *attempt, hash string, err error) {
	addr := addressKey(clientIP)
	if err := s.ips.allow("login", addr); err != nil {
		return nil, nil, "", err
	}
	if orgID, err = ctalk.ParseID("org_id", orgID); err != nil {
		return nil, nil, "", err
	}
	if userID, err = ctalk.ParseID("user_id", userID); err != nil {
		return nil, nil, "", err
	}
	key, trusted, err := s.deviceKey(ctx, orgID, userID, device)
	if err != nil {
		return nil, nil, "", err
	}
	if !trusted {
		key = addr
	}
	if a, err = s.reserveAttempt(ctx, orgID, userID, key, trusted); err != nil {
		return nil, nil, "", err
	}
	var role string
	err = s.db.QueryRow(ctx, `SELECT password_hash, role FROM users WHERE org_id = $1 AND id = $2`, orgID, userID).Scan(&hash, &role)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		a.end(ctx)
		return nil, nil, "", fmt.Errorf("read users: %w", err)
	}
	if !s.checkPassword(hash, password) {
		// The attempt was counted before the check and stays counted.
		a.end(ctx)
		return nil, nil, "", ctalk.Errorf(ctalk.EUnauthorized, badLogin)
	}
	return &Session{OrgID: orgID, UserID: userID, Role: role}, a, hash, nil
}

// VerifyAdminPassword checks an org's admin password, with the same
// throttling as logins, per the client address in ctx (see WithClientAddr).
//
// Returns ENotFound for an unknown org, EUnauthorized for a wrong password,
// ERateLimited after too many failures or attempts.
func (s *Service) VerifyAdminPassword(ctx context.Context, orgID, password string) error {
	addr := addressKey(ClientAddr(ctx))
	if err := s.ips.allow("admin", addr); err != nil {
		return err
	}
	a, err := s.reserveAttempt(ctx, orgID, adminAccount, addr, false)
	if err != nil {
		return err
	}
	defer a.end(ctx)
	var hash string
	err = s.db.QueryRow(ctx, `SELECT admin_password_hash FROM orgs WHERE id = $1`, orgID).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		s.checkPassword("", password)
		return ctalk.Errorf(ctalk.ENotFound, "organization %q not found; check org_id, or create it with register_organization", orgID)
	}
	if err != nil {
		return fmt.Errorf("read orgs: %w", err)
	}
	if !s.checkPassword(hash, password) {
		return ctalk.Errorf(ctalk.EUnauthorized, "the admin password of organization %q is wrong", orgID)
	}
	return a.cleared(s.db.Tx(ctx, func(tx db.Querier) error { return a.clear(ctx, tx) }))
}

// Authenticate returns the session of a token. A revocation takes effect on
// the next call on this replica, and within TokenCacheTTL on every other:
// a replica trusts a check it made for that long.
//
// Returns EUnauthorized for an unknown, malformed, expired or revoked token.
func (s *Service) Authenticate(ctx context.Context, raw string) (*Session, error) {
	if !strings.HasPrefix(raw, TokenPrefix) {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the auth token is not a ctalk token (they start with %q); log in again with login", TokenPrefix)
	}
	if !WellFormed(raw) {
		// A ctalk token with a character changed, missing or added is
		// refused without a round trip, and answered as any unknown one.
		return nil, ctalk.Errorf(ctalk.EUnauthorized, unknownToken)
	}
	hash := HashToken(raw)
	now := s.db.Now()
	if sess, ok := s.cache.Get(hash, now); ok {
		return &sess, nil
	}
	read := s.cache.Begin(now)
	sess, lastUsed, err := s.readToken(ctx, hash, now)
	if err != nil {
		return nil, err
	}
	if err := s.touchCredential(ctalk.WithOrg(ctx, sess.OrgID), tokensTable, hash, lastUsed, now); err != nil {
		return nil, err
	}
	if s.afterRead != nil {
		s.afterRead()
	}
	if now.Sub(lastUsed) > time.Minute {
		lastUsed = now // as touchCredential just recorded
	}
	until := sess.ExpiresAt
	if idle := lastUsed.Add(s.cfg.IdleTTL); idle.Before(until) {
		until = idle
	}
	s.cache.Put(hash, *sess, read, until)
	return sess, nil
}

// unknownToken is the answer to a ctalk token that no login issued, or
// whose record is gone: a token mistyped or cut short looks the same.
const unknownToken = "the auth token is not valid: it is unknown or expired (check that it was copied whole); log in again with login for a new one"

// readToken reads and checks the token with hash at now, and returns its
// session and when it was last used.
func (s *Service) readToken(ctx context.Context, hash string, now time.Time) (*Session, time.Time, error) {
	var (
		sess              = Session{TokenHash: hash}
		lastUsed, expires time.Time
		revoked           sql.NullTime
		kind              string
	)
	// The token's org is what this finds out.
	err := s.db.QueryRow(ctalk.AsOperator(ctx, "token lookup by hash"), `
		SELECT t.org_id, t.user_id, u.role, t.last_used_at, t.expires_at, t.revoked_at, t.kind
		FROM tokens t JOIN users u ON u.org_id = t.org_id AND u.id = t.user_id
		JOIN orgs o ON o.id = t.org_id AND o.deletion_due_at IS NULL
		WHERE t.hash = $1 AND u.removed_at IS NULL`, hash).Scan(&sess.OrgID, &sess.UserID, &sess.Role, &lastUsed, &expires, &revoked, &kind)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, lastUsed, ctalk.Errorf(ctalk.EUnauthorized, unknownToken)
	}
	if err != nil {
		return nil, lastUsed, fmt.Errorf("read tokens: %w", err)
	}
	switch {
	case revoked.Valid:
		return nil, lastUsed, ctalk.Errorf(ctalk.EUnauthorized, "the auth token was revoked (logged out); log in again with login")
	case !now.Before(expires):
		return nil, lastUsed, ctalk.Errorf(ctalk.EUnauthorized, "the auth token expired at %s; log in again with login", expires.UTC().Format(time.RFC3339))
	case kind != KindPersonal && !now.Before(lastUsed.Add(s.cfg.IdleTTL)):
		return nil, lastUsed, ctalk.Errorf(ctalk.EUnauthorized, "the auth token expired after %s unused; log in again with login", s.cfg.IdleTTL)
	}
	sess.ExpiresAt, sess.Kind = expires, kind
	return &sess, lastUsed, nil
}

// Logout revokes the token of sess.
//
// Returns only the database's errors: a token revoked already is not one.
func (s *Service) Logout(ctx context.Context, sess *Session) error {
	return s.revokeCredential(ctx, tokensTable, sess.TokenHash)
}

// refuseIfClosing refuses a new credential in orgID while its deletion is
// scheduled (orgs.ScheduleDeletion): any for an agent, and a browser
// session of anyone but an admin (browserAdmin), who may still export the
// org's data or cancel the deletion. The checks of credentials refuse the
// same (readToken, webSession, OAuthAccess); this says why.
//
// Returns EForbidden, or the database's errors.
func (s *Service) refuseIfClosing(ctx context.Context, orgID string, browserAdmin bool) error {
	var due db.NullTime
	err := s.db.QueryRow(ctx, `SELECT deletion_due_at FROM orgs WHERE id = $1`, orgID).Scan(&due)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read orgs: %w", err)
	}
	if !due.Valid || browserAdmin {
		return nil
	}
	return ctalk.Errorf(ctalk.EForbidden, "organization %q is to be deleted on %s, and sign-ins have stopped; until then an admin can cancel the deletion on the web app's Admin page",
		orgID, due.Time.UTC().Format("2006-01-02 15:04 UTC"))
}
