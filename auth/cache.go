package auth

import (
	"context"
	"log/slog"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/readcache"
)

// TokenCacheTTL is how long a replica trusts a token check it made before it
// reads the token again. A revocation takes effect at once on the replica
// that made it, and on the others when the Postgres notification that
// announces it arrives, within milliseconds; a lost notification (a
// listener reconnecting, a failed send) lets another replica accept the
// revoked token for at most TokenCacheTTL more.
const TokenCacheTTL = time.Second

// revokeChannel is the Postgres channel on which replicas announce whose
// credentials they revoked: ids only, "org/user".
const revokeChannel = "ctalk_revoke"

// maxCachedSessions bounds the cache; beyond it, checks are not cached.
// Only valid tokens are cached, so it holds the tokens used in the last
// two TTLs at most.
const maxCachedSessions = 100000

// sessionCache holds the sessions of recently checked tokens, by token
// hash, never past the token's expiry or idle end.
type sessionCache = readcache.Cache[string, Session]

func newSessionCache(d *db.DB, ttl time.Duration) *sessionCache {
	return readcache.New[string](d, revokeChannel, ttl, maxCachedSessions, func(s Session) readcache.Scope {
		return readcache.Scope{OrgID: s.OrgID, UserID: s.UserID}
	})
}

// Revoked makes the revocation of credentials of orgID/userID take effect:
// at once on this replica, and, on Postgres, on every other through a
// notification (see TokenCacheTTL). Every revoking method of Service calls
// it; a service that revokes in a transaction of its own with RevokeTokens
// calls it once that transaction has committed.
func (s *Service) Revoked(ctx context.Context, orgID, userID string) {
	s.cache.Changed(ctx, readcache.Scope{OrgID: orgID, UserID: userID}, slog.Default())
	if s.onRevoked != nil {
		s.onRevoked(orgID, userID)
	}
}

// OnRevoked makes fn hear every revocation once it has taken effect: of
// this replica (Revoked) and, through Listen, of the others; and, with
// orgID empty, every reconnect of Listen, after which revocations
// announced meanwhile are lost. What credentials stay open beyond one call
// (waits, streams) check theirs anew with it. Call it before Listen.
func (s *Service) OnRevoked(fn func(orgID, userID string)) {
	s.onRevoked = fn
	s.cache.Heard(func(sc readcache.Scope) { fn(sc.OrgID, sc.UserID) })
}

// Recheck reads a login or personal token anew, bypassing the cache, and
// returns its session as Authenticate would, without counting the read as
// a use of the token: an open wait or stream checks with it that the
// token it was opened with still holds.
//
// Returns EUnauthorized for an unknown, malformed, expired or revoked token.
func (s *Service) Recheck(ctx context.Context, raw string) (*Session, error) {
	if !WellFormed(raw) {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the auth token is not a ctalk token (they start with %q); log in again with login", TokenPrefix)
	}
	sess, _, err := s.readToken(ctx, HashToken(raw), s.db.Now())
	return sess, err
}

// Listen applies the revocations announced by other replicas to this one's
// token cache until ctx ends. After each (re)connect it empties the cache,
// since announcements sent while it was away are lost. It returns at once on
// SQLite.
func (s *Service) Listen(ctx context.Context, log *slog.Logger) {
	s.cache.Listen(ctx, log)
}
