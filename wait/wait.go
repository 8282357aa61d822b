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
	for _, k := range keys.Fixed {
		sub.add(k)
	}
	for {
		if keys.More != nil {
			ks, err := keys.More()
			if err != nil {
				return err
			}
			for _, k := range ks {
				sub.add(k)
			}
		}
		if err := Ended(ctx); err != nil {
			return err
		}
		found, err := check()
		if found {
			Settle(ctx)
		}
		if err := Ended(ctx); err != nil {
			// Revoked or cancelled while checking: what the check claimed
			// is handed to no one rather than to a caller no longer there.
			return err
		}
		if found || err != nil {
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
				return Ended(ctx)
			}
		}
	}
}
