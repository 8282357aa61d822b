package auth

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctalk/ctalk/db"
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
// hash. Entries live at most ttl, by both the monotonic and the database's
// clock. It keeps two generations of entries and drops the older one every
// ttl, so that it needs no sweeping.
type sessionCache struct {
	ttl       time.Duration
	mu        sync.Mutex
	cur, prev map[string]*cachedSession
	rotated   time.Time
	// epoch counts forgets. A check that read the database before a forget
	// may have read what the forget's revocation changed, so it does not
	// cache its result (see put).
	epoch atomic.Uint64
}

type cachedSession struct {
	sess Session
	// at is when the token was read (time.Now, monotonic); wall when, by
	// the database's clock; until is when it expires or idles out.
	at, wall, until time.Time
}

func newSessionCache(ttl time.Duration) *sessionCache {
	return &sessionCache{ttl: ttl, cur: map[string]*cachedSession{}, prev: map[string]*cachedSession{}, rotated: time.Now()}
}

// get returns a copy of the cached session of hash, if it is still fresh
// at now (the database's clock) and its token has not expired.
func (c *sessionCache) get(hash string, now time.Time) (*Session, bool) {
	c.mu.Lock()
	e := c.cur[hash]
	if e == nil {
		e = c.prev[hash]
	}
	c.mu.Unlock()
	if e == nil || time.Since(e.at) >= c.ttl || now.Sub(e.wall) >= c.ttl || now.Before(e.wall) || !now.Before(e.until) {
		return nil, false
	}
	sess := e.sess
	return &sess, true
}

// put caches sess, read at at (monotonic) and wall (the database's clock),
// unless a forget happened since epoch was read, before the read.
func (c *sessionCache) put(hash string, sess *Session, at, wall, until time.Time, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch.Load() != epoch {
		return
	}
	if time.Since(c.rotated) >= c.ttl {
		c.prev, c.cur, c.rotated = c.cur, make(map[string]*cachedSession, len(c.cur)), time.Now()
	}
	if len(c.cur) >= maxCachedSessions {
		return
	}
	c.cur[hash] = &cachedSession{sess: *sess, at: at, wall: wall, until: until}
}

// forgetUser drops every cached session of a user.
func (c *sessionCache) forgetUser(orgID, userID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch.Add(1)
	for _, m := range []map[string]*cachedSession{c.cur, c.prev} {
		for h, e := range m {
			if e.sess.UserID == userID && e.sess.OrgID == orgID {
				delete(m, h)
			}
		}
	}
}

// forgetAll drops every cached session.
func (c *sessionCache) forgetAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch.Add(1)
	clear(c.cur)
	clear(c.prev)
}

// Revoked makes the revocation of credentials of orgID/userID take effect:
// at once on this replica, and, on Postgres, on every other through a
// notification (see TokenCacheTTL). Every revoking method of Service calls
// it; a service that revokes in a transaction of its own with RevokeTokens
// calls it once that transaction has committed.
func (s *Service) Revoked(ctx context.Context, orgID, userID string) {
	s.cache.forgetUser(orgID, userID)
	if s.db.Engine != db.Postgres {
		return
	}
	// The revocation has committed; a caller hanging up must not keep the
	// other replicas from hearing of it. A failed send is made up for by
	// the cache's own expiry.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := s.db.Notify(ctx, revokeChannel, []string{orgID + "/" + userID}); err != nil {
		slog.Default().WarnContext(ctx, "could not tell the other replicas of a revocation; they refuse the revoked tokens within the token cache's lifetime", "ttl", s.cache.ttl, "error", err)
	}
}

// Listen applies the revocations announced by other replicas to this one's
// token cache until ctx ends. After each (re)connect it empties the cache,
// since announcements sent while it was away are lost. It returns at once on
// SQLite.
func (s *Service) Listen(ctx context.Context, log *slog.Logger) {
	s.db.Listen(ctx, revokeChannel, func() {
		s.cache.forgetAll()
		s.listening.Store(true)
	}, func(payload string) {
		if org, user, ok := strings.Cut(payload, "/"); ok {
			s.cache.forgetUser(org, user)
		}
	}, log)
}
