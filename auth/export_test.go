package auth

import (
	"context"
	"encoding/base64"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"
)

// SetTokenCacheTTL replaces the token cache of s with an empty one whose
// entries live ttl, so that a test can tell a revocation that took effect
// from a cache entry that merely expired.
func SetTokenCacheTTL(s *Service, ttl time.Duration) { s.cache = newSessionCache(s.db, ttl) }

// Listening reports whether s hears other replicas' revocations.
func Listening(s *Service) bool { return s.cache.Listening() }

// AfterTokenRead makes s call fn between reading a token and caching it.
func AfterTokenRead(s *Service, fn func()) { s.afterRead = fn }

// UsePasskey records a use of orgID/userID's passkey id whose assertion
// carried counter, as an accepted assertion does (see usedPasskey).
func UsePasskey(ctx context.Context, s *Service, orgID, userID, id string, counter uint32) error {
	raw, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil {
		return err
	}
	u := &passkeyUser{orgID: orgID, userID: userID}
	cred := &webauthn.Credential{ID: raw, Authenticator: webauthn.Authenticator{SignCount: counter}}
	return s.usedPasskey(ctx, u, cred)
}

// ClientLabel is clientLabel, for the tests of how a client's name is kept.
var ClientLabel = clientLabel
