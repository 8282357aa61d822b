// Package wait is where every waiting call and open stream of ctalk waits:
// the broker that wakes them (on Postgres across replicas), the one wait
// loop (subscribe before the first check, re-check on a timer, give up at
// the deadline) and the one longest wait. The services keep only what
// they claim; how they wait is here, once.
package wait

import (
	"context"
	"time"
)

// MaxWait caps how long one waiting call may block: platform proxies cut
// requests after a few minutes.
const MaxWait = 120 * time.Second

// Options shape a waiting call.
type Options struct {
	Timeout time.Duration
	// Stop ends the wait early, empty-handed: the server is shutting down.
	Stop <-chan struct{}
	// Tick, when set, is called every TickEvery while waiting, e.g. to send
	// progress notifications.
	Tick      func(waited time.Duration)
	TickEvery time.Duration
	// Recheck is the safety re-read in case a wake-up was lost (spread by
	// Broker.RecheckEvery); the service that waits sets it.
	Recheck time.Duration
}

// Keys returns the wake-up keys a wait listens to. It is called before
// every check, so that a wait may listen to keys that appear while it
// waits (a channel the caller joins); keys once listened to stay.
type Keys func() ([]string, error)

// Key is the Keys of a wait on one key.
func Key(key string) Keys {
	return func() ([]string, error) { return []string{key}, nil }
}

// For waits, as every waiting call does, until check reports that it found
// something (or fails), opts.Timeout (at most MaxWait) passes, opts.Stop
// closes, or ctx ends. It subscribes to the keys of orgID before each
// check, so that nothing committed between a check and the subscription
// can be missed, checks again on every wake-up and about every
// opts.Recheck, and holds no database connection between checks.
func (b *Broker) For(ctx context.Context, orgID string, keys Keys, opts Options, check func() (bool, error)) error {
	sub := b.subscription(orgID, 1)
	defer sub.cancel()
	timeout := min(max(opts.Timeout, 0), MaxWait)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	recheck := time.NewTimer(b.RecheckEvery(opts.Recheck))
	defer recheck.Stop()
	var tick <-chan time.Time
	if opts.Tick != nil && opts.TickEvery > 0 {
		t := time.NewTicker(opts.TickEvery)
		defer t.Stop()
		tick = t.C
	}
	start := time.Now()
	for {
		ks, err := keys()
		if err != nil {
			return err
		}
		for _, k := range ks {
			sub.add(k)
		}
		if found, err := check(); found || err != nil {
			return err
		}
	sleep:
		for {
			select {
			case <-sub.ch:
				break sleep
			case <-recheck.C:
				recheck.Reset(b.RecheckEvery(opts.Recheck))
				break sleep
			case now := <-tick:
				opts.Tick(now.Sub(start))
			case <-deadline.C:
				return nil
			case <-opts.Stop:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}
