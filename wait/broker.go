package wait

import (
	"context"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Broker wakes the agents of this process that wait for a key (a user, a
// channel, an MCP session's subscriptions) of an org. A wake-up
// carries no data: the waiter reads what is new from the database, so a
// duplicate wake-up costs one query and a lost one costs latency only.
type Broker struct {
	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
	count   int
	// remote queues the wake-ups for other replicas while Publish runs.
	remote     chan string
	publishing atomic.Bool
	// heard are the functions of Heard.
	heard []func(orgID, key string)
	// revocations are the waits and streams held for their credential.
	revocations revocations
}

// Heard makes fn hear every wake-up, of this replica (Wake) or sent by
// another (Listen), with its org and key (a user id, or a key of channels'),
// before any waiter here is woken by it, and, with orgID empty, every
// (re)connect of Listen, after which the wake-ups sent meanwhile are lost.
// Caches whose changes announce themselves as wake-ups forget with it what
// the change touched (the inbox's pages, channels' knowledge that a user has
// no alerts), on every replica alike, so that a woken agent reads anew.
func (b *Broker) Heard(fn func(orgID, key string)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.heard = append(b.heard, fn)
}

// hear calls the functions of Heard.
func (b *Broker) hear(orgID, key string) {
	b.mu.Lock()
	heard := b.heard
	b.mu.Unlock()
	for _, fn := range heard {
		fn(orgID, key)
	}
}

// NewBroker returns an empty broker.
func NewBroker() *Broker {
	return &Broker{waiters: map[string]map[chan struct{}]struct{}{}, remote: make(chan string, 4096)}
}

func userKey(orgID, userID string) string { return orgID + "\x00" + userID }

// Subscribe registers interest in wake-ups for a user. The caller must call
// the returned cancel function when it stops waiting.
func (b *Broker) Subscribe(orgID, userID string) (<-chan struct{}, func()) {
	return b.subscribe(orgID, userID, 1)
}

// Watch is Subscribe for a watcher that is not an agent waiting, such as a
// person's open page or an MCP session's resource subscriptions: Waiting
// does not count it.
func (b *Broker) Watch(orgID, userID string) (<-chan struct{}, func()) {
	return b.subscribe(orgID, userID, 0)
}

// subscribe adds a waiter, counted as weight agents.
func (b *Broker) subscribe(orgID, userID string, weight int) (<-chan struct{}, func()) {
	sub := b.subscription(orgID, weight)
	sub.add(userID)
	return sub.ch, sub.cancel
}

// subscription is one waiter woken by any of several keys of an org, on
// one channel, counted as weight agents however many keys it has.
type subscription struct {
	b      *Broker
	orgID  string
	ch     chan struct{}
	keys   []string
	weight int
}

func (b *Broker) subscription(orgID string, weight int) *subscription {
	b.mu.Lock()
	b.count += weight
	b.mu.Unlock()
	return &subscription{b: b, orgID: orgID, ch: make(chan struct{}, 1), weight: weight}
}

// add makes the waiter woken by key too.
func (s *subscription) add(key string) {
	k := userKey(s.orgID, key)
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	set := s.b.waiters[k]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		s.b.waiters[k] = set
	}
	if _, ok := set[s.ch]; !ok {
		set[s.ch] = struct{}{}
		s.keys = append(s.keys, k)
	}
}

// cancel removes the waiter; calling it again does nothing.
func (s *subscription) cancel() {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	for _, k := range s.keys {
		if set := s.b.waiters[k]; set != nil {
			delete(set, s.ch)
			if len(set) == 0 {
				delete(s.b.waiters, k)
			}
		}
	}
	s.b.count -= s.weight
	s.keys, s.weight = nil, 0
}

// Wake wakes every waiter of the user: those of this process at once and,
// while Publish runs, those of other replicas through Postgres. Call it once
// the change it announces has committed. It never blocks.
func (b *Broker) Wake(orgID, userID string) {
	b.hear(orgID, userID)
	b.wakeLocal(orgID, userID)
	if b.publishing.Load() {
		select {
		case b.remote <- notifyPayload(orgID, userID):
		default:
			// The queue is full only while Postgres does not take the
			// notifications; the other replicas' re-check covers for it.
		}
	}
}

func (b *Broker) wakeLocal(orgID, userID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.waiters[userKey(orgID, userID)] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// WakeAll wakes every local waiter, after notifications may have been lost.
func (b *Broker) WakeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, set := range b.waiters {
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// Waiting returns the number of agents waiting in this process.
func (b *Broker) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.count
}

// recheckRate bounds the safety re-checks of one process's waiting agents,
// all together, a second. Each re-check is a query or two; ten thousand
// agents re-checking every 10 s would send the database two thousand a
// second, and those that started waiting together would re-check together,
// holding up the asks and hand-overs queued behind them.
const recheckRate = 200

// RecheckEvery is how long a waiting agent of this process waits before it
// next re-reads the database on its own, in case a wake-up was lost: every,
// or longer when so many agents wait that their re-checks would exceed
// recheckRate a second, spread by a quarter either way so that agents that
// started waiting together do not re-check together. A lost wake-up costs
// at most this, and never more than the wait's own timeout.
func (b *Broker) RecheckEvery(every time.Duration) time.Duration {
	d := max(every, time.Duration(b.Waiting())*time.Second/recheckRate)
	return d*3/4 + rand.N(d/2+1)
}

// NotifyChannel is the Postgres channel that carries wake-ups between replicas.
const NotifyChannel = "ctalk_wake"

// notifyPayload names the user to wake: ids only, never message text.
func notifyPayload(orgID, userID string) string { return orgID + "/" + userID }

// Listen relays the wake-ups of other replicas to this one's waiters until
// ctx ends, so that a commit on one replica wakes waiters on every other.
// A wake-up is heard first (see Heard). After each (re)connect it is heard
// with no org, and it wakes every local waiter, because wake-ups sent while
// it was away are lost. It returns at once on SQLite.
func (b *Broker) Listen(ctx context.Context, d *db.DB, log *slog.Logger) {
	d.Listen(ctx, NotifyChannel, func() {
		b.hear("", "")
		b.WakeAll()
	}, func(payload string) {
		if org, user, ok := strings.Cut(payload, "/"); ok && org != "" {
			b.hear(org, user)
			b.wakeLocal(org, user)
		}
	}, log)
}

// Publish sends the wake-ups of Wake to the other replicas' listeners until
// ctx ends, in batches: whatever queued while the last batch was being
// sent goes out in the next. A wake-up that cannot be sent costs the waiters
// elsewhere latency only: they re-check on their own.
func (b *Broker) Publish(ctx context.Context, d *db.DB, log *slog.Logger) {
	b.publishing.Store(true)
	defer b.publishing.Store(false)
	pending := map[string]struct{}{}
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-b.remote:
			pending[p] = struct{}{}
		}
	gather:
		for len(pending) < 1000 {
			select {
			case p := <-b.remote:
				pending[p] = struct{}{}
			default:
				break gather
			}
		}
		batch := slices.Collect(maps.Keys(pending))
		clear(pending)
		sendCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := d.Notify(sendCtx, NotifyChannel, batch)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			failing = true
			log.Warn("wake-ups to other replicas are failing; their agents see changes at their next re-check", "error", err)
		case err == nil && failing:
			failing = false
			log.Info("wake-ups to other replicas are sent again")
		}
	}
}
