package notify

import (
	"context"
	"fmt"
	"time"
)

// Run expands and delivers due notifications until ctx ends: on every
// replica, each taking what it claims (see claimEventsSQL). It also prunes
// what is older than Retention.
func (s *Service) Run(ctx context.Context) {
	if err := s.loadKeys(ctx); err != nil {
		s.log.Error("notifications: cannot load the server's keys; retrying", "error", err)
	}
	poll := time.NewTicker(s.cfg.Poll)
	defer poll.Stop()
	lastAge, lastPrune := time.Time{}, time.Time{}
	for ctx.Err() == nil {
		if s.unsubKey == nil || s.vapid.Load() == nil {
			if err := s.loadKeys(ctx); err != nil {
				s.wait(ctx, poll.C)
				continue
			}
		}
		busy, full, err := s.step(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("notifications: a round of delivery failed; retrying", "error", err)
		}
		if now := time.Now(); now.Sub(lastAge) > 5*time.Second {
			lastAge = now
			s.measureQueueAge(ctx)
			if now.Sub(lastPrune) > time.Hour {
				lastPrune = now
				if err := s.Prune(ctx); err != nil {
					s.log.Warn("notifications: prune failed", "error", err)
				}
			}
		}
		if !busy {
			s.wait(ctx, poll.C)
		}
		if !full {
			s.gather(ctx)
		}
	}
}

// gather lets new work gather for Gather (see Config.Gather).
func (s *Service) gather(ctx context.Context) {
	if s.cfg.Gather <= 0 {
		return
	}
	t := time.NewTimer(s.cfg.Gather)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (s *Service) wait(ctx context.Context, tick <-chan time.Time) {
	select {
	case <-ctx.Done():
	case <-tick:
	case <-s.kick:
	}
}

// Step notifies the new questions of SQLite's outbox (see takeOutbox),
// expands the due events and sends the due deliveries once, and reports
// whether it found any. Tests call it to drive the queue.
//
// Returns only the database's errors.
func (s *Service) Step(ctx context.Context) (busy bool, err error) {
	busy, _, err = s.step(ctx)
	return busy, err
}

// step is Step, which also reports whether a part of the round took a
// whole batch: more is likely waiting, and the next round should not wait
// for it to gather.
func (s *Service) step(ctx context.Context) (busy, full bool, err error) {
	taken, err := s.takeOutbox(ctx)
	if err != nil {
		return false, false, err
	}
	full = taken == expandBatch
	var events, deliveries, reminders int
	if err := s.db.QueryRow(ctx, anyDueSQL, s.db.Now()).Scan(&events, &deliveries, &reminders); err != nil {
		return taken > 0, full, fmt.Errorf("look for due notifications: %w", err)
	}
	n := 0
	if reminders > 0 {
		if n, err = s.remindDue(ctx); err != nil {
			return n > 0, true, err
		}
		full = full || n == expandBatch
	}
	if events > 0 || n > 0 {
		m, err := s.expandDue(ctx)
		if full = full || m == expandBatch; err != nil {
			return n+m > 0, full, err
		}
		n += m
	}
	if n == 0 && deliveries == 0 {
		return taken > 0, full, nil
	}
	m, err := s.deliverDue(ctx)
	return taken+n+m > 0, full || m == s.cfg.Batch, err
}

// Drain runs Step until nothing is due. Tests call it.
//
// Returns only the database's errors.
func (s *Service) Drain(ctx context.Context) error {
	for {
		busy, err := s.Step(ctx)
		if err != nil || !busy {
			return err
		}
	}
}

// Expand notifies the new questions of SQLite's outbox and expands the due
// events once, without delivering. Tests call it.
//
// Returns only the database's errors.
func (s *Service) Expand(ctx context.Context) error {
	if _, err := s.takeOutbox(ctx); err != nil {
		return err
	}
	_, err := s.expandDue(ctx)
	return err
}
