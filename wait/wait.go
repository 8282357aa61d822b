// Package wait is where every waiting call and open stream of ctalk waits:
// the broker that wakes them (on Postgres across replicas), the one wait
// loop (subscribe before the first check, re-check on a timer, give up at
// the deadline), the one longest wait, and the credential a wait was opened
// with, whose revocation ends it (see Hold). The services keep only what
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
	// Credential, when set, is what the wait was opened with: the wait
	// ends with its refusal once it is revoked (see Broker.Hold).
	Credential *Credential
}

// Keys are the wake-up keys a wait listens to: Fixed from the start, and
// those More returns, when set. More is called before every check, once
// Fixed are listened to, so that a wait may listen to keys that appear
// while it waits (a channel the caller joins, which a Fixed key announces);
// keys once listened to stay.
type Keys struct {
	Fixed []string
	More  func() ([]string, error)
}

// Key is the Keys of a wait on one key.
func Key(key string) Keys { return Keys{Fixed: []string{key}} }

// For waits, as every waiting call does, until check reports that it found
// something (or fails), opts.Timeout (at most MaxWait) passes, opts.Stop
// closes, or ctx ends. It subscribes to the keys of orgID before each
// check, so that nothing committed between a check and the subscription
// can be missed, checks again on every wake-up and about every
// opts.Recheck, and holds no database connection between checks.
//
// A wait never checks once ctx has ended: a call whose client went away or
// cancelled it claims nothing, and what it would have got stays for the
// next. With opts.Credential, the wait ends with the credential's refusal
// as soon as it is found revoked (see Hold), and nothing it checks
// afterwards is handed over.
//
// Returns nil when check found something or at the deadline; the error of
// check or keys.More; the credential's refusal (EUnauthorized,
// EForbidden) once it is found revoked; ctx's error once ctx ends.
func (b *Broker) For(ctx context.Context, orgID string, keys Keys, opts Options, check func() (bool, error)) error {
	ctx, release := b.Hold(ctx, opts.Credential)
	defer release()
	sub := b.subscription(orgID, 1)
	defer sub.cancel()
	c := b.newClock(opts)
	defer c.stop()
	for _, k := range keys.Fixed {
		sub.add(k)
	}
	for {
		if done, err := try(ctx, sub, keys, check); done {
			return err
		}
		if again, err := b.sleep(ctx, sub, c, opts); !again {
			return err
		}
	}
}

// clock holds a wait's timers: its deadline, its next re-check and its
// progress ticks.
type clock struct {
	deadline, recheck *time.Timer
	ticker            *time.Ticker
	tick              <-chan time.Time
	start             time.Time
}

// newClock starts the timers of a wait with opts.
func (b *Broker) newClock(opts Options) *clock {
	c := &clock{deadline: time.NewTimer(min(max(opts.Timeout, 0), MaxWait)), recheck: time.NewTimer(b.RecheckEvery(opts.Recheck))}
	if opts.Tick != nil && opts.TickEvery > 0 {
		c.ticker = time.NewTicker(opts.TickEvery)
		c.tick = c.ticker.C
	}
	c.start = time.Now()
	return c
}

// stop stops the timers.
func (c *clock) stop() {
	c.deadline.Stop()
	c.recheck.Stop()
	if c.ticker != nil {
		c.ticker.Stop()
	}
}

// try subscribes to keys.More's keys and runs check once, unless ctx has
// ended; done says the wait is over, with err.
func try(ctx context.Context, sub *subscription, keys Keys, check func() (bool, error)) (done bool, err error) {
	if keys.More != nil {
		ks, err := keys.More()
		if err != nil {
			return true, err
		}
		for _, k := range ks {
			sub.add(k)
		}
	}
	if err := Ended(ctx); err != nil {
		return true, err
	}
	found, err := check()
	if found {
		Settle(ctx)
	}
	if err := Ended(ctx); err != nil {
		// Revoked or cancelled while checking: what the check claimed
		// is handed to no one rather than to a caller no longer there.
		return true, err
	}
	return found || err != nil, err
}

// sleep waits for a wake-up or the re-check (again), or the deadline, a
// stop or ctx's end (not again, with ctx's error), reporting progress
// meanwhile.
func (b *Broker) sleep(ctx context.Context, sub *subscription, c *clock, opts Options) (again bool, err error) {
	for {
		select {
		case <-sub.ch:
			return true, nil
		case <-c.recheck.C:
			c.recheck.Reset(b.RecheckEvery(opts.Recheck))
			return true, nil
		case now := <-c.tick:
			opts.Tick(now.Sub(c.start))
		case <-c.deadline.C:
			return false, nil
		case <-opts.Stop:
			return false, nil
		case <-ctx.Done():
			return false, Ended(ctx)
		}
	}
}
