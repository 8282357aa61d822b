// Package readcache keeps, per replica, what a service read from the
// database for a short while, so that a call made again within that while
// costs no query. An entry lives at most the cache's TTL, by both the
// monotonic clock and the database's; a change forgets the entries it
// touches at once on the replica that made it and, on Postgres, on every
// other through a notification; a replica whose listener reconnects
// forgets everything, since notifications sent while it was away are lost.
// A lost notification thus lets another replica serve what changed for at
// most the TTL more.
//
// The services that keep one are named in CONTRIBUTING.md's layout, whose
// list a test holds to this package's importers.
package readcache

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Scope names whose data an entry holds: a user of an org, or, with UserID
// empty, the whole org. A change announces the scope it touched.
type Scope struct {
	OrgID, UserID string
}

// covers reports whether a change of s touches an entry of e.
func (s Scope) covers(e Scope) bool {
	return s.OrgID == e.OrgID && (s.UserID == "" || s.UserID == e.UserID)
}

// String is the scope as notifications carry it: "org/user", or "org/"
// for the whole org. Ids never hold a slash.
func (s Scope) String() string { return s.OrgID + "/" + s.UserID }

// Cache holds values of type V by key K. It keeps two generations of
// entries and drops the older one every TTL, so that it needs no sweeping.
type Cache[K comparable, V any] struct {
	db      *db.DB
	channel string
	ttl     time.Duration
	max     int
	scope   func(V) Scope

	mu        sync.Mutex
	cur, prev generation[K, V]
	rotated   time.Time
	// epoch counts forgets. A read that began before a forget may have
	// read what the forget's change changed, so its value is not kept
	// (see Put).
	epoch     atomic.Uint64
	listening atomic.Bool
	// heard is the function of Heard.
	heard func(Scope)
}

// generation is one generation of entries, with the keys of each scope's
// entries and the scopes of each org, so that a change visits only the
// entries it touches: a user's, or their org's.
type generation[K comparable, V any] struct {
	entries map[K]*entry[V]
	scopes  map[Scope]map[K]struct{}
	orgs    map[string]map[Scope]struct{}
}

func newGeneration[K comparable, V any](size int) generation[K, V] {
	return generation[K, V]{entries: make(map[K]*entry[V], size),
		scopes: map[Scope]map[K]struct{}{}, orgs: map[string]map[Scope]struct{}{}}
}

// put keeps e for k, whose value belongs to scope s.
func (g generation[K, V]) put(k K, e *entry[V], s Scope) {
	g.entries[k] = e
	keys := g.scopes[s]
	if keys == nil {
		keys = map[K]struct{}{}
		g.scopes[s] = keys
		scopes := g.orgs[s.OrgID]
		if scopes == nil {
			scopes = map[Scope]struct{}{}
			g.orgs[s.OrgID] = scopes
		}
		scopes[s] = struct{}{}
	}
	keys[k] = struct{}{}
}

// forget drops the entries of scope s (see Scope.covers), whose values'
// scopes scope tells.
func (g generation[K, V]) forget(s Scope, scope func(V) Scope) {
	if s.UserID != "" {
		g.forgetScope(s, scope)
		return
	}
	for es := range g.orgs[s.OrgID] {
		g.forgetScope(es, scope)
	}
}

// forgetScope drops the entries kept under scope s. A key put again since
// with a value of another scope stays.
func (g generation[K, V]) forgetScope(s Scope, scope func(V) Scope) {
	for k := range g.scopes[s] {
		if e := g.entries[k]; e != nil && scope(e.v) == s {
			delete(g.entries, k)
		}
	}
	delete(g.scopes, s)
	if scopes := g.orgs[s.OrgID]; scopes != nil {
		delete(scopes, s)
		if len(scopes) == 0 {
			delete(g.orgs, s.OrgID)
		}
	}
}

func (g generation[K, V]) clear() {
	clear(g.entries)
	clear(g.scopes)
	clear(g.orgs)
}

type entry[V any] struct {
	v V
	// at is when the value was read (time.Now, monotonic); wall when, by
	// the database's clock; until is when it stops being valid by its own
	// terms (a token's expiry), or zero.
	at, wall, until time.Time
}

// New returns an empty cache over d whose entries live ttl, that holds at
// most max entries (beyond, values are not kept), that announces and hears
// changes on the Postgres notification channel named channel, and whose
// values belong to the scope that scope returns.
func New[K comparable, V any](d *db.DB, channel string, ttl time.Duration, max int, scope func(V) Scope) *Cache[K, V] {
	return &Cache[K, V]{db: d, channel: channel, ttl: ttl, max: max, scope: scope,
		cur: newGeneration[K, V](0), prev: newGeneration[K, V](0), rotated: time.Now()}
}

// Get returns the value kept for k, if it is still fresh at now (the
// database's clock) and valid by its own terms.
func (c *Cache[K, V]) Get(k K, now time.Time) (v V, ok bool) {
	c.mu.Lock()
	e := c.cur.entries[k]
	if e == nil {
		e = c.prev.entries[k]
	}
	c.mu.Unlock()
	if e == nil || time.Since(e.at) >= c.ttl || now.Sub(e.wall) >= c.ttl || now.Before(e.wall) || !e.until.IsZero() && !now.Before(e.until) {
		return v, false
	}
	return e.v, true
}

// Read is a read of the database under way, begun by Begin.
type Read struct {
	at, wall time.Time
	epoch    uint64
}

// Begin marks the start of a read at now (the database's clock), before its
// first statement: a change forgotten after Begin keeps the read's value
// out of the cache.
func (c *Cache[K, V]) Begin(now time.Time) Read {
	return Read{epoch: c.epoch.Load(), at: time.Now(), wall: now}
}

// Put keeps v, read by r, for k, valid by its own terms until until (zero:
// no end of its own), unless a change was forgotten since r began.
func (c *Cache[K, V]) Put(k K, v V, r Read, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch.Load() != r.epoch {
		return
	}
	if time.Since(c.rotated) >= c.ttl {
		c.prev, c.cur, c.rotated = c.cur, newGeneration[K, V](len(c.cur.entries)), time.Now()
	}
	if len(c.cur.entries) >= c.max {
		return
	}
	c.cur.put(k, &entry[V]{v: v, at: r.at, wall: r.wall, until: until}, c.scope(v))
}

// Forget drops every entry of scope s on this replica only, for a cache
// whose changes reach the other replicas by a path of its own (inbox's
// pages ride on its wake-ups); Changed does both.
func (c *Cache[K, V]) Forget(s Scope) { c.forget(s) }

// ForgetAll drops every entry on this replica, for a cache whose own
// listener has just (re)connected.
func (c *Cache[K, V]) ForgetAll() { c.forgetAll() }

// forget drops every entry of scope s, visiting only those.
func (c *Cache[K, V]) forget(s Scope) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch.Add(1)
	c.cur.forget(s, c.scope)
	c.prev.forget(s, c.scope)
}

// forgetAll drops every entry.
func (c *Cache[K, V]) forgetAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch.Add(1)
	c.cur.clear()
	c.prev.clear()
}

// Changed makes a committed change of what scope s holds take effect: at
// once on this replica, and, on Postgres, on every other through a
// notification. Call it after the change's transaction commits.
func (c *Cache[K, V]) Changed(ctx context.Context, s Scope, log *slog.Logger) {
	c.forget(s)
	if !c.db.Notifies() {
		return
	}
	// The change has committed; a caller hanging up must not keep the
	// other replicas from hearing of it. A failed send is made up for by
	// the cache's own expiry.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := c.db.Notify(ctx, c.channel, []string{s.String()}); err != nil {
		log.WarnContext(ctx, "could not tell the other replicas of a change; they serve what they cached for at most the cache's lifetime", "channel", c.channel, "ttl", c.ttl, "error", err)
	}
}

// Listen applies the changes announced by other replicas to this cache
// until ctx ends. After each (re)connect it empties the cache. It returns
// at once on SQLite.
func (c *Cache[K, V]) Listen(ctx context.Context, log *slog.Logger) {
	c.db.Listen(ctx, c.channel, func() {
		c.forgetAll()
		c.listening.Store(true)
		if c.heard != nil {
			c.heard(Scope{})
		}
	}, func(payload string) {
		if org, user, ok := strings.Cut(payload, "/"); ok {
			s := Scope{OrgID: org, UserID: user}
			c.forget(s)
			if c.heard != nil {
				c.heard(s)
			}
		}
	}, log)
}

// Heard makes fn hear, after Listen has applied it, every change another
// replica announced, and, with an empty scope, every (re)connect of
// Listen, after which the changes announced meanwhile are lost. Call it
// before Listen.
func (c *Cache[K, V]) Heard(fn func(Scope)) { c.heard = fn }

// Listening reports whether Listen has connected once.
func (c *Cache[K, V]) Listening() bool { return c.listening.Load() }
