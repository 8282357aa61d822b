package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
)

// AuthRequest is a checked authorization request: what the sign-in and
// consent pages show and, once the person allows it, what the code is
// bound to.
type AuthRequest struct {
	Client        *Client
	RedirectURI   string
	State         string
	CodeChallenge string
	Scope         string
	Resource      string
}

// RedirectHost is the host the person is sent back to, shown on the consent
// page: a host name, or for a custom scheme the scheme itself.
func (r *AuthRequest) RedirectHost() string {
	u, err := url.Parse(r.RedirectURI)
	if err != nil {
		return r.RedirectURI
	}
	if u.Host != "" {
		return u.Host
	}
	return u.Scheme + ":"
}

// Query returns the request's parameters, for carrying it through the
// sign-in form.
func (r *AuthRequest) Query() url.Values {
	return url.Values{
		"response_type":         {"code"},
		"client_id":             {r.Client.ID},
		"redirect_uri":          {r.RedirectURI},
		"state":                 {r.State},
		"code_challenge":        {r.CodeChallenge},
		"code_challenge_method": {"S256"},
		"scope":                 {r.Scope},
		"resource":              {r.Resource},
	}
}

// ParseAuthorize checks an authorization request (the query of /authorize
// or the hidden fields of the sign-in form) against site.
//
// A nil request with an error means the client or its redirect URI could not
// be trusted: show the error, never redirect. A request with an error means
// the error goes back to the client at the request's redirect URI (see
// ErrorRedirect).
//
// Returns *Error for a refused request, and the errors of Client.
func (s *Service) ParseAuthorize(ctx context.Context, q url.Values, site Site) (*AuthRequest, error) {
	clientID := q.Get("client_id")
	if clientID == "" {
		return nil, invalidRequest("client_id is missing")
	}
	c, err := s.Client(ctx, clientID)
	if err != nil {
		return nil, err
	}
	redirect := q.Get("redirect_uri")
	if redirect == "" && len(c.RedirectURIs) == 1 {
		redirect = c.RedirectURIs[0]
	}
	if !matchRedirect(c.RedirectURIs, redirect) {
		return nil, invalidRequest("redirect_uri %q is not registered for client %q", ctalk.Shorten(redirect, 200), c.Name)
	}
	r := &AuthRequest{Client: c, RedirectURI: redirect, State: q.Get("state"), Scope: Scope}
	switch {
	case q.Get("response_type") != "code":
		return r, oauthErr(http.StatusBadRequest, "unsupported_response_type", "response_type must be code")
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") == "":
		return r, invalidRequest("PKCE is required: send code_challenge with code_challenge_method=S256")
	case q.Get("code_challenge_method") != "S256":
		return r, invalidRequest("code_challenge_method %q is not supported: use S256", ctalk.Shorten(q.Get("code_challenge_method"), 20))
	case !validChallenge(q.Get("code_challenge")):
		return r, invalidRequest("code_challenge must be 43 to 128 characters of A-Z, a-z, 0-9, '-', '.', '_', '~'")
	case q.Get("resource") == "":
		return r, oauthErr(http.StatusBadRequest, "invalid_target", "resource is required (RFC 8707): send resource=%s", site.Resource)
	case !oauthex.MatchesResource([]string{q.Get("resource")}, site.Resource):
		return r, oauthErr(http.StatusBadRequest, "invalid_target", "resource %q is not served here; this server's resource is %s", ctalk.Shorten(q.Get("resource"), 200), site.Resource)
	}
	r.CodeChallenge = q.Get("code_challenge")
	r.Resource = site.Resource
	return r, nil
}

func validChallenge(c string) bool {
	if len(c) < 43 || len(c) > 128 {
		return false
	}
	for _, r := range c {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~", r)) {
			return false
		}
	}
	return true
}

// ErrorRedirect returns the URL that tells the client at r's redirect URI
// that its request failed, with state and iss (RFC 9207).
func (r *AuthRequest) ErrorRedirect(err error, issuer string) string {
	code, desc := "server_error", "the request could not be completed"
	var oe *Error
	if errors.As(err, &oe) {
		code, desc = oe.Code, oe.Description
	}
	return withParams(r.RedirectURI, url.Values{"error": {code}, "error_description": {desc}}, r.State, issuer)
}

// Denied returns the URL that tells the client the person refused.
func (r *AuthRequest) Denied(issuer string) string {
	return withParams(r.RedirectURI, url.Values{"error": {"access_denied"}, "error_description": {"the person did not allow the connection"}}, r.State, issuer)
}

func withParams(redirect string, v url.Values, state, issuer string) string {
	if state != "" {
		v.Set("state", state)
	}
	v.Set("iss", issuer)
	u, _ := url.Parse(redirect)
	q := u.Query()
	for k, vs := range v {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Consented reports whether the person of sess already allowed r's client.
//
// Returns only the database's errors.
func (s *Service) Consented(ctx context.Context, sess *auth.Session, clientID string) (bool, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM oauth_consents WHERE org_id = $1 AND user_id = $2 AND client_id = $3`,
		sess.OrgID, sess.UserID, clientID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("read oauth_consents: %w", err)
	}
	return n > 0, nil
}

// Approve records that the person of sess allows r's client to act as them,
// issues a single-use code and returns the URL to send the browser to: the
// redirect URI with code, state and iss.
//
// Returns only the database's errors.
func (s *Service) Approve(ctx context.Context, r *AuthRequest, sess *auth.Session, issuer string) (string, error) {
	raw, hash := newSecret(codePrefix)
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		if _, err := tx.Exec(ctx, `DELETE FROM oauth_codes WHERE expires_at < $1`, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO oauth_codes (hash, client_id, org_id, user_id, redirect_uri, code_challenge, scope, resource, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			hash, r.Client.ID, sess.OrgID, sess.UserID, r.RedirectURI, r.CodeChallenge, r.Scope, r.Resource, now, now.Add(s.cfg.CodeTTL)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO oauth_consents (org_id, user_id, client_id, scope, created_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (org_id, user_id, client_id) DO NOTHING`, sess.OrgID, sess.UserID, r.Client.ID, r.Scope, now); err != nil {
			return err
		}
		return s.markUsed(ctx, tx, r.Client.ID, now)
	})
	if err != nil {
		return "", err
	}
	return withParams(r.RedirectURI, url.Values{"code": {raw}}, r.State, issuer), nil
}
