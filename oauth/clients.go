package oauth

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/outbound"
)

// Client is a registered OAuth client.
type Client struct {
	ID string
	// Kind is "dynamic" (RFC 7591) or "metadata" (the id is the URL of its
	// Client ID Metadata Document).
	Kind         string
	Name         string
	RedirectURIs []string
}

// Limits on what a client may register.
const (
	maxRedirects    = 20
	maxRedirectLen  = 2000
	maxClientName   = 200
	unnamedClient   = "an unnamed client"
	maxMetadataSize = 64 << 10
)

// clientMetadata is the part of a registration request or metadata document
// ctalk reads. Other fields are ignored, as RFC 7591 allows.
type clientMetadata struct {
	ClientID                string   `json:"client_id"`
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	ClientURI               string   `json:"client_uri"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ApplicationType         string   `json:"application_type"`
	Scope                   string   `json:"scope"`
}

// validate checks what ctalk needs of a client's metadata: redirect URIs
// that are https, loopback http or a custom scheme of the client's own; the
// code flow; no client secret (ctalk's clients are public and prove
// themselves with PKCE).
func (m *clientMetadata) validate() error {
	if len(m.RedirectURIs) == 0 {
		return invalidRedirect("redirect_uris is required: list the URIs ctalk may send the person back to")
	}
	if len(m.RedirectURIs) > maxRedirects {
		return invalidRedirect("redirect_uris lists %d URIs; at most %d are accepted", len(m.RedirectURIs), maxRedirects)
	}
	for _, r := range m.RedirectURIs {
		if err := checkRedirect(r); err != nil {
			return err
		}
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return invalidClientMetadata("grant type %q is not supported: ctalk offers authorization_code and refresh_token", g)
		}
	}
	for _, r := range m.ResponseTypes {
		if r != "code" {
			return invalidClientMetadata("response type %q is not supported: ctalk offers code", r)
		}
	}
	switch m.TokenEndpointAuthMethod {
	case "", "none", "client_secret_basic", "client_secret_post":
		// Clients that ask for a secret are registered as public clients
		// and told so in the response: PKCE proves them.
	default:
		return invalidClientMetadata("token_endpoint_auth_method %q is not supported: ctalk's clients are public (none) and use PKCE", m.TokenEndpointAuthMethod)
	}
	m.ClientName = strings.TrimSpace(ctalk.Shorten(m.ClientName, maxClientName))
	if m.ClientName == "" {
		m.ClientName = unnamedClient
	}
	return nil
}

// checkRedirect accepts https, http on a loopback host, and custom schemes
// (cursor://, vscode://) that the client names for itself, and refuses
// schemes a browser would run or read instead of handing to an application.
func checkRedirect(raw string) error {
	if len(raw) > maxRedirectLen {
		return invalidRedirect("a redirect URI is over %d characters", maxRedirectLen)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || !u.IsAbs() {
		return invalidRedirect("redirect URI %q is not an absolute URI", ctalk.Shorten(raw, 100))
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return invalidRedirect("redirect URI %q has a fragment; redirect URIs must not", ctalk.Shorten(raw, 100))
	}
	switch scheme := strings.ToLower(u.Scheme); scheme {
	case "https":
		if u.Host == "" {
			return invalidRedirect("redirect URI %q has no host", ctalk.Shorten(raw, 100))
		}
	case "http":
		if !isLoopback(u.Hostname()) {
			return invalidRedirect("redirect URI %q uses http on a host that is not loopback: use https, or http://localhost, http://127.0.0.1 or http://[::1]", ctalk.Shorten(raw, 100))
		}
	case "javascript", "data", "vbscript", "file", "about", "blob", "filesystem", "ws", "wss", "ftp":
		return invalidRedirect("redirect URI scheme %q is not allowed: use https, loopback http, or your application's own scheme", scheme)
	default:
		// A custom scheme the client names in its own metadata.
	}
	return nil
}

// isLoopback reports whether host is one of the loopback names that native
// clients listen on.
func isLoopback(host string) bool {
	switch strings.ToLower(host) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// matchRedirect reports whether requested is one of the registered redirect
// URIs: exactly, or, for http on a loopback host, on any port (RFC 8252
// section 7.3), since native clients listen on a port chosen at run time.
func matchRedirect(registered []string, requested string) bool {
	if slices.Contains(registered, requested) {
		return true
	}
	ru, err := url.Parse(requested)
	if err != nil || ru.Scheme != "http" || !isLoopback(ru.Hostname()) {
		return false
	}
	for _, r := range registered {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "http" || !isLoopback(u.Hostname()) {
			continue
		}
		if strings.EqualFold(u.Hostname(), ru.Hostname()) && u.EscapedPath() == ru.EscapedPath() && u.RawQuery == ru.RawQuery && u.User == nil && ru.User == nil {
			return true
		}
	}
	return false
}

// Register registers a client dynamically (RFC 7591) for a request from
// clientIP. The registration expires unless it is used to sign in within
// RegistrationTTL.
//
// Returns *Error for bad metadata, ERateLimited past the address's budget.
func (s *Service) Register(ctx context.Context, body []byte, clientIP string) (*oauthex.ClientRegistrationResponse, error) {
	if err := s.register.Allow(clientIP); err != nil {
		return nil, err
	}
	var m clientMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, invalidClientMetadata("the registration request is not a JSON object of client metadata: %v", err)
	}
	m.ClientID = ""
	if err := m.validate(); err != nil {
		return nil, err
	}
	id, _ := newSecret("ctalk_client_")
	id = id[:len("ctalk_client_")+24]
	redirects, _ := json.Marshal(m.RedirectURIs)
	now := s.db.Now()
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		// Registrations never used are deleted as new ones arrive, so the
		// table stays as small as the clients in use.
		if _, err := tx.Exec(ctx, `DELETE FROM oauth_clients WHERE used_at IS NULL AND expires_at < $1`, now); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO oauth_clients (id, kind, name, redirect_uris, metadata, created_at, expires_at) VALUES ($1, 'dynamic', $2, $3, $4, $5, $6)`,
			id, m.ClientName, string(redirects), string(body), now, now.Add(s.cfg.RegistrationTTL))
		return err
	})
	if err != nil {
		return nil, err
	}
	appType := m.ApplicationType
	return &oauthex.ClientRegistrationResponse{
		ClientID:         id,
		ClientIDIssuedAt: now,
		ClientRegistrationMetadata: oauthex.ClientRegistrationMetadata{
			RedirectURIs:            m.RedirectURIs,
			ClientName:              m.ClientName,
			ClientURI:               m.ClientURI,
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
			ApplicationType:         appType,
			Scope:                   Scope,
		},
	}, nil
}

// Client returns a registered client: a dynamic registration by its id, or
// the client whose metadata document is at the https URL id (fetched, or
// from the cache).
//
// Returns *Error (invalid_client) for an unknown or expired client or a
// metadata document that cannot be used.
func (s *Service) Client(ctx context.Context, id string) (*Client, error) {
	if strings.HasPrefix(id, "https://") {
		return s.metadataClient(ctx, id)
	}
	c, expires, used, err := s.storedClient(ctx, id)
	if err != nil {
		return nil, err
	}
	if c == nil || c.Kind != "dynamic" || (!used && expires.Valid && !s.db.Now().Before(expires.Time)) {
		return nil, unknownClient(id)
	}
	return c, nil
}

func unknownClient(id string) *Error {
	return oauthErr(http.StatusUnauthorized, "invalid_client", "client %q is not registered here, or its registration expired; register it again", ctalk.Shorten(id, 100))
}

func (s *Service) storedClient(ctx context.Context, id string) (c *Client, expires sql.NullTime, used bool, err error) {
	c = &Client{ID: id}
	var redirects string
	var usedAt sql.NullTime
	err = s.db.QueryRow(ctx, `SELECT kind, name, redirect_uris, used_at, expires_at FROM oauth_clients WHERE id = $1`, id).
		Scan(&c.Kind, &c.Name, &redirects, (*db.NullTime)(&usedAt), (*db.NullTime)(&expires))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, expires, false, nil
	}
	if err != nil {
		return nil, expires, false, fmt.Errorf("read oauth_clients: %w", err)
	}
	if err := json.Unmarshal([]byte(redirects), &c.RedirectURIs); err != nil {
		return nil, expires, false, err
	}
	return c, expires, usedAt.Valid, nil
}

// markUsed keeps a dynamic registration from expiring once a person signed
// in with it.
func (s *Service) markUsed(ctx context.Context, tx db.Querier, clientID string, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE oauth_clients SET used_at = $1 WHERE id = $2 AND used_at IS NULL`, now, clientID)
	return err
}

// metadataClient returns the client described by the Client ID Metadata
// Document at rawURL, from the cache while it is fresh.
func (s *Service) metadataClient(ctx context.Context, rawURL string) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" || u.Fragment != "" || u.User != nil {
		return nil, oauthErr(http.StatusBadRequest, "invalid_client", "client_id %q is not a usable metadata document URL: it must be an https URL with a path", ctalk.Shorten(rawURL, 100))
	}
	c, expires, _, err := s.storedClient(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	now := s.db.Now()
	if c != nil && c.Kind == "metadata" && expires.Valid && now.Before(expires.Time) {
		return c, nil
	}
	m, body, err := s.fetchMetadata(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	c = &Client{ID: rawURL, Kind: "metadata", Name: m.ClientName, RedirectURIs: m.RedirectURIs}
	redirects, _ := json.Marshal(m.RedirectURIs)
	err = s.db.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, `
			INSERT INTO oauth_clients (id, kind, name, redirect_uris, metadata, created_at, used_at, expires_at)
			VALUES ($1, 'metadata', $2, $3, $4, $5, $5, $6)
			ON CONFLICT (id) DO UPDATE SET name = excluded.name, redirect_uris = excluded.redirect_uris,
				metadata = excluded.metadata, expires_at = excluded.expires_at`,
			rawURL, c.Name, string(redirects), string(body), now, now.Add(s.cfg.MetadataTTL))
		if err != nil {
			return fmt.Errorf("insert into oauth_clients: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// fetchMetadata fetches and checks a Client ID Metadata Document.
func (s *Service) fetchMetadata(ctx context.Context, rawURL string) (*clientMetadata, []byte, error) {
	bad := func(format string, args ...any) *Error {
		return oauthErr(http.StatusBadRequest, "invalid_client", "the client metadata document at %s "+format, append([]any{ctalk.Shorten(rawURL, 100)}, args...)...)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, nil, bad("cannot be requested")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.fetch.Do(req)
	if err != nil {
		e := bad("could not be fetched: %s", outbound.Unreachable)
		e.Unreachable = true
		return nil, nil, e
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e := bad("answered HTTP %d", resp.StatusCode)
		e.Unreachable = true
		return nil, nil, e
	}
	body, err := readLimited(resp, maxMetadataSize)
	if err != nil {
		return nil, nil, bad("%s", err.Error())
	}
	var m clientMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, nil, bad("is not a JSON object")
	}
	if m.ClientID != rawURL {
		return nil, nil, bad("names client_id %q, not its own URL", ctalk.Shorten(m.ClientID, 100))
	}
	if err := m.validate(); err != nil {
		return nil, nil, err
	}
	return &m, body, nil
}
