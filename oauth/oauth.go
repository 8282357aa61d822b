// Package oauth is ctalk's OAuth 2.1 authorization server for MCP clients:
// client registration (dynamic, RFC 7591, and Client ID Metadata Documents),
// authorization codes with PKCE, access and refresh tokens bound to one
// person, one client and the MCP resource (RFC 8707), their rotation and
// revocation, and the metadata documents clients discover it by (RFC 8414,
// RFC 9728).
//
// No maintained Go library covers the MCP profile (resource indicators,
// dynamic registration, metadata documents, any-port loopback redirects,
// empty scopes), so the endpoints are written here over the database package,
// like every other ctalk service; grants and their tokens are stored by the
// auth package, with every other credential. The metadata and registration
// types come
// from the official MCP Go SDK's oauthex package. The sign-in and consent
// pages that end an authorization live in the web package.
package oauth

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/outbound"
)

// Scope is the one scope ctalk grants: acting as the person who signed in,
// with the tools that person may use. A request without a scope gets it too.
const Scope = "ctalk"

// Config holds the lifetimes and limits of the authorization server.
type Config struct {
	// AccessTTL is an access token's lifetime; RefreshTTL a refresh token's.
	AccessTTL  time.Duration
	RefreshTTL time.Duration
	// RefreshGrace is how long a refresh token that was just rotated may
	// still be used, for clients that retry a refresh they think failed;
	// only until its successor is first used.
	RefreshGrace time.Duration
	// CodeTTL is an authorization code's lifetime.
	CodeTTL time.Duration
	// RegistrationTTL is how long a dynamic registration that was never used
	// to sign in lives.
	RegistrationTTL time.Duration
	// RegisterRate and RegisterBurst bound registrations per client address.
	RegisterRate  float64
	RegisterBurst int
	// MetadataFetch fetches Client ID Metadata Documents; nil uses a client
	// that reaches globally routable addresses only. Tests set it.
	MetadataFetch *http.Client
	// MetadataTTL is how long a fetched metadata document is cached.
	MetadataTTL time.Duration
}

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{
		AccessTTL:       time.Hour,
		RefreshTTL:      30 * 24 * time.Hour,
		RefreshGrace:    2 * time.Minute,
		CodeTTL:         2 * time.Minute,
		RegistrationTTL: 24 * time.Hour,
		RegisterRate:    0.2,
		RegisterBurst:   20,
		MetadataTTL:     time.Hour,
	}
}

// Service is the authorization server.
type Service struct {
	db       *db.DB
	auth     *auth.Service
	cfg      Config
	register *auth.AddressLimiter
	fetch    *http.Client
}

// NewService returns a Service over d that keeps its grants and tokens with
// a's credentials.
func NewService(d *db.DB, a *auth.Service, cfg Config) *Service {
	fetch := cfg.MetadataFetch
	if fetch == nil {
		fetch = outbound.Client(outbound.Options{})
	}
	return &Service{db: d, auth: a, cfg: cfg, register: auth.NewAddressLimiter(cfg.RegisterRate, cfg.RegisterBurst), fetch: fetch}
}

// Prefixes of the secrets this package hands out, so that people and secret
// scanners can tell them apart and the api package can route a bearer token
// to the right check without a database round trip.
const (
	accessPrefix  = "ctalk_at_"
	refreshPrefix = "ctalk_rt_"
	codePrefix    = "ctalk_code_"
)

// newSecret returns a fresh 256-bit secret with prefix and its stored hash.
func newSecret(prefix string) (raw, hash string) {
	var b [32]byte
	rand.Read(b[:])
	raw = prefix + base64.RawURLEncoding.EncodeToString(b[:])
	return raw, auth.HashToken(raw)
}

// IsAccessToken reports whether raw has the shape of an OAuth access token.
func IsAccessToken(raw string) bool {
	return strings.HasPrefix(raw, accessPrefix) && len(raw) == len(accessPrefix)+43
}

// Site is what a request knows about where this server is reached: the
// issuer (the bare origin of PUBLIC_URL) and the MCP resource its tokens are
// for.
type Site struct {
	Issuer   string
	Resource string
}

// SiteOf returns the Site of a public URL such as https://ctalk.example.com.
func SiteOf(publicURL string) Site {
	origin := strings.TrimRight(publicURL, "/")
	if i := strings.Index(origin, "://"); i >= 0 {
		if j := strings.IndexByte(origin[i+3:], '/'); j >= 0 {
			origin = origin[:i+3+j]
		}
	}
	return Site{Issuer: origin, Resource: strings.TrimRight(publicURL, "/") + "/mcp"}
}
