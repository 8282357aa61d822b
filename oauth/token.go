package oauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
)

// TokenResponse is the token endpoint's answer (RFC 6749 section 5.1).
type TokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// Token answers a token request: an authorization code with its PKCE
// verifier, or a refresh token.
//
// Returns *Error for every refusal the client can act on.
func (s *Service) Token(ctx context.Context, form url.Values, site Site) (*TokenResponse, error) {
	if r := form.Get("resource"); r != "" && !oauthex.MatchesResource([]string{r}, site.Resource) {
		return nil, oauthErr(http.StatusBadRequest, "invalid_target", "resource %q is not served here; this server's resource is %s", ctalk.Shorten(r, 200), site.Resource)
	}
	switch form.Get("grant_type") {
	case "authorization_code":
		return s.exchangeCode(ctx, form, site)
	case "refresh_token":
		return s.refresh(ctx, form)
	case "":
		return nil, invalidRequest("grant_type is missing: use authorization_code or refresh_token")
	}
	return nil, oauthErr(http.StatusBadRequest, "unsupported_grant_type", "grant_type %q is not supported: use authorization_code or refresh_token", ctalk.Shorten(form.Get("grant_type"), 40))
}

// grant is one client connected as one person.
type grant struct {
	id, orgID, userID, clientID, scope, resource string
}

func (s *Service) exchangeCode(ctx context.Context, form url.Values, site Site) (*TokenResponse, error) {
	// A secret found by its hash names the org it belongs to.
	ctx = ctalk.AsOperator(ctx, "OAuth code exchange by hash")
	code, verifier := form.Get("code"), form.Get("code_verifier")
	switch {
	case code == "":
		return nil, invalidRequest("code is missing")
	case verifier == "":
		return nil, invalidRequest("code_verifier is missing: PKCE is required")
	case form.Get("resource") == "":
		return nil, oauthErr(http.StatusBadRequest, "invalid_target", "resource is required (RFC 8707): send resource=%s", site.Resource)
	}
	var out *TokenResponse
	var reused string
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		c, err := readCode(ctx, tx, code)
		if err != nil {
			return err
		}
		if c.used.Valid {
			// A code presented twice was intercepted or replayed: the
			// tokens issued for it are revoked (RFC 6749 section 4.1.2).
			reused = c.grantID.String
			return invalidGrant("the authorization code was already used; start the sign-in again")
		}
		if err := c.check(form, now); err != nil {
			return err
		}
		g, err := useCode(ctx, tx, code, c, now)
		if err != nil {
			return err
		}
		out, err = s.issue(ctx, tx, g, now)
		return err
	})
	if reused != "" {
		if rerr := s.auth.RevokeGrantOf(ctx, "", reused); rerr != nil {
			return nil, rerr
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// codeRow is an authorization code as stored, with its client's name.
type codeRow struct {
	grant
	redirect, challenge, clientName string
	expires                         time.Time
	used                            sql.NullTime
	grantID                         sql.NullString
}

func readCode(ctx context.Context, tx db.Querier, code string) (*codeRow, error) {
	var c codeRow
	err := tx.QueryRow(ctx, `
		SELECT c.client_id, c.org_id, c.user_id, c.redirect_uri, c.code_challenge, c.scope, c.resource, c.expires_at, c.used_at, c.grant_id, COALESCE(k.name, '')
		FROM oauth_codes c LEFT JOIN oauth_clients k ON k.id = c.client_id
		WHERE c.hash = $1`, auth.HashToken(code)).
		Scan(&c.clientID, &c.orgID, &c.userID, &c.redirect, &c.challenge, &c.scope, &c.resource, &c.expires, &c.used, &c.grantID, &c.clientName)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, invalidGrant("the authorization code is not valid; start the sign-in again")
	}
	if err != nil {
		return nil, fmt.Errorf("read authorization code: %w", err)
	}
	return &c, nil
}

// check refuses an unused code that the token request may not exchange.
func (c *codeRow) check(form url.Values, now time.Time) error {
	switch {
	case !now.Before(c.expires):
		return invalidGrant("the authorization code expired; start the sign-in again")
	case form.Get("client_id") != "" && form.Get("client_id") != c.clientID:
		return invalidGrant("the authorization code was issued to another client")
	case form.Get("redirect_uri") != c.redirect:
		return invalidGrant("redirect_uri does not match the one of the authorization request")
	case !oauthex.MatchesResource([]string{form.Get("resource")}, c.resource):
		return oauthErr(http.StatusBadRequest, "invalid_target", "resource does not match the one of the authorization request")
	case !pkceMatches(form.Get("code_verifier"), c.challenge):
		return invalidGrant("code_verifier does not match the code_challenge of the authorization request")
	}
	return nil
}

// useCode marks the code used and creates the grant it starts.
func useCode(ctx context.Context, tx db.Querier, code string, c *codeRow, now time.Time) (grant, error) {
	g := c.grant
	if c.clientName == "" {
		c.clientName = unnamedClient
	}
	g.id, _ = newSecret("")
	g.id = g.id[:22]
	// The condition makes the code's use a compare-and-set: of two
	// exchanges at once, the second finds it used and fails.
	res, err := tx.Exec(ctx, `UPDATE oauth_codes SET used_at = $1, grant_id = $2 WHERE hash = $3 AND used_at IS NULL`, now, g.id, auth.HashToken(code))
	if err != nil {
		return g, fmt.Errorf("mark authorization code used: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return g, invalidGrant("the authorization code was already used; start the sign-in again")
	}
	return g, auth.CreateGrant(ctx, tx, auth.NewGrant{ID: g.id, OrgID: g.orgID, UserID: g.userID, ClientID: g.clientID,
		ClientName: c.clientName, Scope: g.scope, Resource: g.resource}, now)
}

func pkceMatches(verifier, challenge string) bool {
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}

// issue stores a new access and refresh token of g.
func (s *Service) issue(ctx context.Context, tx db.Querier, g grant, now time.Time) (*TokenResponse, error) {
	access, accessHash := newSecret(accessPrefix)
	refresh, refreshHash := newSecret(refreshPrefix)
	if err := auth.IssueGrantTokens(ctx, tx, g.id, auth.GrantTokens{AccessHash: accessHash, RefreshHash: refreshHash,
		AccessExpires: now.Add(s.cfg.AccessTTL), RefreshExpires: now.Add(s.cfg.RefreshTTL)}, now); err != nil {
		return nil, err
	}
	return &TokenResponse{AccessToken: access, TokenType: "Bearer", ExpiresIn: int64(s.cfg.AccessTTL / time.Second),
		RefreshToken: refresh, Scope: g.scope}, nil
}

// refresh rotates a refresh token. The previous token may be presented
// again within RefreshGrace of its rotation while its successor was never
// used, because a client that lost the answer retries with it; any other
// use of a replaced token is reuse (OAuth 2.1 section 4.3.1): someone else
// holds the chain, and the whole grant ends, every access and refresh token
// of it.
func (s *Service) refresh(ctx context.Context, form url.Values) (*TokenResponse, error) {
	raw := form.Get("refresh_token")
	if raw == "" {
		return nil, invalidRequest("refresh_token is missing")
	}
	for range 5 {
		out, err := s.refreshOnce(ctx, raw, form.Get("client_id"))
		if !errors.Is(err, errRefreshRace) {
			return out, err
		}
	}
	return nil, oauthErr(http.StatusServiceUnavailable, "temporarily_unavailable", "the refresh token is being refreshed by other requests at the same time; retry")
}

// errRefreshRace is a refresh that lost a race with another refresh of the
// same token.
var errRefreshRace = errors.New("refresh token rotated concurrently")

func (s *Service) refreshOnce(ctx context.Context, raw, clientID string) (*TokenResponse, error) {
	// A secret found by its hash names the org it belongs to.
	ctx = ctalk.AsOperator(ctx, "OAuth refresh by token hash")
	var out *TokenResponse
	var leaked string
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		r, err := readRefresh(ctx, tx, raw)
		if err != nil {
			return err
		}
		if err := r.check(clientID, now, s.cfg.RefreshGrace); err != nil {
			if errors.Is(err, errRefreshLeaked) {
				leaked = r.Grant.ID
				return invalidGrant("the refresh token was already used and replaced; this connection is revoked for safety; sign in again")
			}
			return err
		}
		out, err = s.rotate(ctx, tx, raw, r, now)
		return err
	})
	if leaked != "" {
		if rerr := s.auth.RevokeGrantOf(ctx, "", leaked); rerr != nil {
			return nil, rerr
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// refreshRow is a refresh token as stored, with its grant and successor.
type refreshRow struct{ auth.RefreshToken }

func readRefresh(ctx context.Context, tx db.Querier, raw string) (*refreshRow, error) {
	r, err := auth.ReadRefreshToken(ctx, tx, auth.HashToken(raw))
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, invalidGrant("the refresh token is not valid; sign in again")
	}
	return &refreshRow{*r}, nil
}

// errRefreshLeaked is a refresh token presented again after its successor
// was used: someone else holds it.
var errRefreshLeaked = errors.New("refresh token reused after rotation")

// check refuses a refresh token that may not be rotated now.
func (r *refreshRow) check(clientID string, now time.Time, grace time.Duration) error {
	switch {
	case r.GrantRevoked.Valid:
		return invalidGrant("this connection was revoked; sign in again")
	case !now.Before(r.Expires):
		return invalidGrant("the refresh token expired; sign in again")
	case clientID != "" && clientID != r.Grant.ClientID:
		return invalidGrant("the refresh token was issued to another client")
	case r.Rotated.Valid && (r.SuccessorRotated.Valid || now.After(r.Rotated.Time.Add(grace))):
		// A replaced token is retried only before its successor is used,
		// and within the grace: anything else is reuse, even a moment
		// after the successor's own refresh.
		return errRefreshLeaked
	}
	return nil
}

// rotate issues the grant's new tokens and records them as the refresh
// token's successor.
func (s *Service) rotate(ctx context.Context, tx db.Querier, raw string, r *refreshRow, now time.Time) (*TokenResponse, error) {
	if r.Rotated.Valid && r.Successor.Valid {
		// A retry within the grace: the successor it never received is
		// dropped, with its access token's sibling left to expire. Only
		// while still unused: a successor refreshed since this read makes
		// the retry start over, and find it used.
		ok, err := auth.DropUnusedRefreshToken(ctx, tx, r.Successor.String)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errRefreshRace
		}
	}
	g := r.Grant
	out, err := s.issue(ctx, tx, grant{id: g.ID, orgID: g.OrgID, userID: g.UserID, clientID: g.ClientID, scope: g.Scope, resource: g.Resource}, now)
	if err != nil {
		return nil, err
	}
	// A compare-and-set on the successor that was read: a refresh of the
	// same token that committed meanwhile makes this one start over, so a
	// token never has two live successors.
	ok, err := auth.RecordRotation(ctx, tx, g.ID, auth.HashToken(raw), r.Successor.String, auth.HashToken(out.RefreshToken), now)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errRefreshRace
	}
	return out, nil
}

// Authenticate returns the session of an OAuth access token presented to
// resource. Expiry, revocation and the audience are checked on every call.
//
// Returns EUnauthorized for an unknown, expired or revoked token, or one
// issued for another resource.
func (s *Service) Authenticate(ctx context.Context, raw, resource string) (*auth.Session, error) {
	const again = "; your client should sign in again (in Claude Code: /mcp)"
	if !IsAccessToken(raw) {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the access token is malformed"+again)
	}
	a, err := s.auth.OAuthAccess(ctx, auth.HashToken(raw))
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the access token is not valid: it is unknown or expired"+again)
	}
	switch {
	case a.Revoked:
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "this connection was revoked (logged out)"+again)
	case !s.db.Now().Before(a.ExpiresAt):
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the access token expired; your client should refresh it")
	case !oauthex.MatchesResource([]string{a.Resource}, resource):
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the access token was issued for %s, not for %s"+again, a.Resource, resource)
	}
	return &a.Session, nil
}

// RevokeGrant ends a connection of the person orgID/userID: its access and
// refresh tokens stop working at once. Revoking an unknown or another
// person's grant does nothing.
//
// Returns only the database's errors.
func (s *Service) RevokeGrant(ctx context.Context, orgID, userID, grantID string) error {
	if err := s.auth.RevokeGrant(ctx, orgID, userID, grantID); ctalk.ErrorCode(err) != ctalk.ENotFound {
		return err
	}
	return nil
}

// Revoke ends the grant of an access or refresh token (RFC 7009). Unknown
// tokens are not an error, as the RFC asks.
//
// Returns only the database's errors.
func (s *Service) Revoke(ctx context.Context, raw string) error {
	return s.auth.RevokeGrantOf(ctx, auth.HashToken(raw), "")
}

// Grant is a client connected as a person, for the page that lists them.
type Grant = auth.Grant

// Grants lists the live connections of a person, newest first: not
// revoked, with a refresh token that has not expired.
//
// Returns only the database's errors.
func (s *Service) Grants(ctx context.Context, orgID, userID string) ([]Grant, error) {
	return s.auth.Grants(ctx, orgID, userID)
}
