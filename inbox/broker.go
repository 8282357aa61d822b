package inbox

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Broker wakes the agents of this process that wait for a user. A wake-up
// carries no data: the waiter reads what is new from the database, so a
// duplicate wake-up costs one query and a lost one costs latency only.
type Broker struct {
	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
	count   int
}

// NewBroker returns an empty broker.
func NewBroker() *Broker {
	return &Broker{waiters: map[string]map[chan struct{}]struct{}{}}
}

func userKey(orgID, userID string) string { return orgID + "\x00" + userID }

// Subscribe registers interest in wake-ups for a user. The caller must call
// the returned cancel function when it stops waiting.
func (b *Broker) Subscribe(orgID, userID string) (<-chan struct{}, func()) {
	key := userKey(orgID, userID)
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	set := b.waiters[key]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		b.waiters[key] = set
	}
	set[ch] = struct{}{}
	b.count++
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		if _, ok := set[ch]; ok {
			delete(set, ch)
			b.count--
			if len(set) == 0 {
				delete(b.waiters, key)
			}
		}
		b.mu.Unlock()
	}
}

// Wake wakes every local waiter of the user. It never blocks.
func (b *Broker) Wake(orgID, userID string) {
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

// notifyChannel is the Postgres channel that carries wake-ups between replicas.
const notifyChannel = "ctalk_wake"

// notifyPayload names the user to wake: ids only, never message text.
func notifyPayload(orgID, userID string) string { return orgID + "/" + userID }

// Listen relays Postgres notifications to the broker until ctx ends, so that
// a commit on one replica wakes waiters on every other. It reconnects by
// itself, and after each reconnect wakes every local waiter, because
// notifications sent while it was away are lost.
func (b *Broker) Listen(ctx context.Context, databaseURL string, log *slog.Logger) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := b.listenOnce(ctx, databaseURL, func() { backoff = 100 * time.Millisecond })
		if ctx.Err() != nil {
			return
		}
		log.Warn("wake-up listener lost its connection; reconnecting", "error", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (b *Broker) listenOnce(ctx context.Context, databaseURL string, connected func()) error {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	connected()
	b.WakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		org, user, ok := strings.Cut(n.Payload, "/")
		if !ok {
			continue
		}
		b.Wake(org, user)
	}
}
