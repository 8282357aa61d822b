// Package sso signs people in through their organization's own identity
// provider. An org's admin configures one provider, of one of two kinds.
// At an OpenID Connect provider a person signs in by the authorization code
// flow with PKCE, state and nonce, and comes back with an ID token whose
// issuer, audience, expiry and signature (from the provider's published
// keys) are checked. At a SAML 2.0 provider (saml.go) they sign in by a
// signed AuthnRequest and come back with a response that crewjam/saml
// checks, answering that very request, its assertion accepted once. The
// person at the provider (its stable subject, or NameID) is linked to one
// ctalk member, by the rules of link; the
// org may also create members just in time, and require sign-in through
// the provider (sso_required), which the password doors ask about through
// Gate. It owns the sso_* tables.
package sso

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/orgs"
)

// CallbackPath is where providers send the browser back: one address for
// every org, since the state names the sign-in it ends.
const CallbackPath = "/sso/callback"

// KindOIDC is the kind of an OpenID Connect provider.
const KindOIDC = "oidc"

// StateTTL is how long a sign-in begun at the provider may take to come
// back.
const StateTTL = 10 * time.Minute

// providerTTL is how long a provider's discovery document, with its key
// set, is reused before it is fetched again. Keys the provider rotates in
// meanwhile are fetched by the key set when a token names one it lacks.
const providerTTL = 10 * time.Minute

// Config is what the service needs from the server around it.
type Config struct {
	// HTTP makes every request to the providers (discovery, keys, the
	// token endpoint): the server's guarded outbound client.
	HTTP *http.Client
	// AllowHTTP lets an issuer be an http:// URL, for tests and local
	// development against a provider on loopback; never set otherwise.
	AllowHTTP bool
	// Resolver looks up the TXT records that prove an org's email domains;
	// nil is net.DefaultResolver.
	Resolver TXTResolver
	// RecheckEvery is how often RecheckDomainsEvery looks for verified
	// domains due to be looked up again (see DomainRecheck); zero is an
	// hour.
	RecheckEvery time.Duration
}

// Service is the organizations' single sign-on.
type Service struct {
	db   *db.DB
	cfg  Config
	orgs *orgs.Service

	mu        sync.Mutex
	providers map[string]cachedProvider
}

type cachedProvider struct {
	p       *oidc.Provider
	fetched time.Time
}

// New returns the service over d.
func New(d *db.DB, cfg Config, o *orgs.Service) *Service {
	if cfg.HTTP == nil {
		cfg.HTTP = http.DefaultClient
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.RecheckEvery <= 0 {
		cfg.RecheckEvery = time.Hour
	}
	return &Service{db: d, cfg: cfg, orgs: o, providers: map[string]cachedProvider{}}
}

// discover returns the provider at issuer, from its discovery document
// (fetched through the guarded client, kept for providerTTL).
func (s *Service) discover(ctx context.Context, issuer string) (*oidc.Provider, error) {
	s.mu.Lock()
	c, ok := s.providers[issuer]
	s.mu.Unlock()
	if ok && time.Since(c.fetched) < providerTTL {
		return c.p, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, s.cfg.HTTP), issuer)
	if err != nil {
		return nil, unreachable("its discovery document", err)
	}
	s.mu.Lock()
	s.providers[issuer] = cachedProvider{p: p, fetched: time.Now()}
	s.mu.Unlock()
	return p, nil
}

// unreachable is the error of a request to the provider that failed: what
// the person can check, without the provider's own answer, which may
// carry anything.
func unreachable(what string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "issuer did not match"):
		return ctalk.Errorf(ctalk.EInvalid, "the provider's discovery document names another issuer: enter the issuer URL exactly as the provider's /.well-known/openid-configuration gives it")
	case strings.Contains(msg, "not public"):
		return ctalk.Errorf(ctalk.EInvalid, "the identity provider could not be reached for %s: its address must be public", what)
	}
	return ctalk.Errorf(ctalk.EUnavailable, "the identity provider could not be reached for %s: check the issuer URL, or try again in a moment", what)
}
