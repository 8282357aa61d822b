package auth

import (
	"context"
	"log/slog"
	"time"

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
}

// Listen applies the revocations announced by other replicas to this one's
// token cache until ctx ends. After each (re)connect it empties the cache,
// since announcements sent while it was away are lost. It returns at once on
// SQLite.
func (s *Service) Listen(ctx context.Context, log *slog.Logger) {
	s.cache.Listen(ctx, log)
}
