package notify

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/ctalk/ctalk/db"
)

// delivery is a claimed delivery and its event.
type delivery struct {
	ID, EventID, Channel, Target string
	Attempts                     int
	CreatedAt                    time.Time
	Event                        *storedEvent
	claim                        string
	// sent is set once it was delivered, for recordSent.
	sent bool
	// hook is a webhook delivery's webhook, nil when it is gone, once
	// hookRead (see loadWebhooks).
	hook     *webhookTarget
	hookRead bool
}

// deliverDue claims due deliveries and sends them, Workers at a time.
func (s *Service) deliverDue(ctx context.Context) (int, error) {
	now := s.db.Now()
	claim := newID("c_")
	var ds []*delivery
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		if err := s.planClaim(ctx, tx); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, s.claimSQL(claimDeliveriesSQL, claimDeliveriesUpdate, claimDeliveriesTail), now.Add(s.cfg.Lease), now, claim, s.cfg.Batch)
		if err != nil {
			return fmt.Errorf("claim deliveries: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			d := &delivery{claim: claim}
			if err := rows.Scan(&d.ID, &d.EventID, &d.Channel, &d.Target, &d.Attempts, &d.CreatedAt); err != nil {
				return fmt.Errorf("scan delivery: %w", err)
			}
			ds = append(ds, d)
		}
		return rows.Err()
	})
	if err != nil || len(ds) == 0 {
		return 0, err
	}
	if err := s.loadEvents(ctx, ds); err != nil {
		return len(ds), err
	}
	if err := s.loadWebhooks(ctx, ds); err != nil {
		return len(ds), err
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, s.cfg.Workers)
	for _, group := range s.holdDigests(ctx, s.groupEmails(s.dropDeleting(ctx, ds))) {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if len(group) == 1 && group[0].Channel != ChannelEmail {
				s.deliver(ctx, group[0])
				return
			}
			s.deliverEmails(ctx, group)
		})
	}
	wg.Wait()
	return len(ds), s.recordSent(ctx, ds)
}

// recordSent records the deliveries of one claim that were sent, in one
// statement: a burst costs a commit per round, not per delivery. Should it
// fail, they are sent again once their lease runs out.
func (s *Service) recordSent(ctx context.Context, ds []*delivery) error {
	args := []any{s.db.Now(), ds[0].claim}
	for _, d := range ds {
		if d.sent {
			args = append(args, d.ID)
		}
	}
	if len(args) == 2 {
		return nil
	}
	err := s.record(ctx, deliveredSQL+"("+db.Placeholders(3, len(args)-2)+")", args...)
	if err != nil {
		return fmt.Errorf("record deliveries sent; they will be sent again: %w", err)
	}
	return nil
}

// groupEmails groups the claimed emails by address (of one person), each
// group one mail, and leaves every other delivery, and every email when
// there is no digest window, a group of its own.
func (s *Service) groupEmails(ds []*delivery) [][]*delivery {
	var out [][]*delivery
	at := map[string]int{}
	for _, d := range ds {
		if d.Channel != ChannelEmail || d.Event == nil || s.cfg.DigestWindow <= 0 {
			out = append(out, []*delivery{d})
			continue
		}
		key := d.Event.OrgID + "\x00" + d.Event.UserID + "\x00" + d.Target
		if i, ok := at[key]; ok {
			out[i] = append(out[i], d)
			continue
		}
		at[key] = len(out)
		out = append(out, []*delivery{d})
	}
	return out
}

// holdDigests returns the groups to send now: every group but the mails
// to an address whose last mail went out less than DigestWindow ago,
// which wait until the window ends, when whatever waits goes out as one
// digest. The waiting mails are held in one transaction for the claim:
// a burst to a few people costs a commit per claim, not per mail. Should
// it fail, they are claimed and held again once their lease runs out.
func (s *Service) holdDigests(ctx context.Context, groups [][]*delivery) [][]*delivery {
	if s.cfg.DigestWindow <= 0 {
		return groups
	}
	now := s.db.Now()
	var send [][]*delivery
	var holds []db.Stmt
	for _, group := range groups {
		first := group[0]
		if first.Channel != ChannelEmail || first.Event == nil {
			send = append(send, group)
			continue
		}
		last, err := s.lastEmail(ctx, first.Event.OrgID, first.Event.UserID, first.Target)
		if err != nil {
			s.log.Warn("notifications: cannot read the last mail sent; sending", "error", err)
		}
		until := last.Add(s.cfg.DigestWindow)
		if last.IsZero() || !now.Before(until) {
			send = append(send, group)
			continue
		}
		args := []any{until, first.claim}
		for _, d := range group {
			args = append(args, d.ID)
		}
		holds = append(holds, db.Stmt{Query: digestHoldSQL + "(" + db.Placeholders(3, len(group)) + ")", Args: args})
	}
	if len(holds) > 0 {
		err := s.db.Tx(ctx, func(tx db.Querier) error {
			for _, h := range holds {
				if _, err := tx.Exec(ctx, h.Query, h.Args...); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			s.log.Warn("notifications: cannot hold mails for the digest; they will be claimed again", "mails", len(holds), "error", err)
		}
	}
	return send
}

// lastEmail is when the last mail to an address of a person went, zero
// when none did.
func (s *Service) lastEmail(ctx context.Context, orgID, userID, address string) (time.Time, error) {
	var last db.NullTime
	if err := s.db.QueryRow(ctx, lastEmailSQL, orgID, userID, address).Scan(&last); err != nil {
		return time.Time{}, fmt.Errorf("read the last mail sent: %w", err)
	}
	if !last.Valid {
		return time.Time{}, nil
	}
	return last.Time, nil
}

// deliverEmails sends the claimed emails to one address that holdDigests
// let go: one mail, or the digest of several.
func (s *Service) deliverEmails(ctx context.Context, group []*delivery) {
	if len(group) == 1 {
		s.deliver(ctx, group[0])
		return
	}
	err := s.sendDigest(ctx, group)
	for _, d := range group {
		s.settle(ctx, d, err)
	}
}

func (s *Service) loadEvents(ctx context.Context, ds []*delivery) error {
	byID := map[string][]*delivery{}
	var args []any
	for _, d := range ds {
		if byID[d.EventID] == nil {
			args = append(args, d.EventID)
		}
		byID[d.EventID] = append(byID[d.EventID], d)
	}
	rows, err := s.db.Query(ctx, deliveryEventsSQL+"("+db.Placeholders(1, len(args))+")", args...)
	if err != nil {
		return fmt.Errorf("read events of deliveries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return err
		}
		for _, d := range byID[e.ID] {
			d.Event = e
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return s.loadOrgs(ctx, ds)
}

// loadOrgs reads the org settings of the deliveries' events, once per org
// of a claim, for compose.
func (s *Service) loadOrgs(ctx context.Context, ds []*delivery) error {
	orgs := map[string]*OrgSettings{}
	deleting := map[string]bool{}
	for _, d := range ds {
		e := d.Event
		if e == nil {
			continue
		}
		if orgs[e.OrgID] == nil {
			org, err := orgSettings(ctx, s.db, e.OrgID)
			if err != nil {
				return err
			}
			orgs[e.OrgID] = &org
			if deleting[e.OrgID], err = s.orgDeleting(ctx, e.OrgID); err != nil {
				return err
			}
		}
		e.org, e.deleting = orgs[e.OrgID], deleting[e.OrgID]
	}
	return nil
}

// dropDeleting settles the deliveries of orgs whose deletion is scheduled
// as failed, but the notices that go whatever the settings, and returns
// the others (see SkipDeleting).
func (s *Service) dropDeleting(ctx context.Context, ds []*delivery) []*delivery {
	keep := ds[:0:0]
	for _, d := range ds {
		if d.Event != nil && d.Event.deleting && d.Event.Kind != KindSecurity && d.Event.Kind != KindWebhookDisabled {
			s.settle(ctx, d, permanent("the organization is to be deleted"))
			continue
		}
		keep = append(keep, d)
	}
	return keep
}

// sendError is a failed send: Permanent ones are not retried.
type sendError struct {
	msg       string
	permanent bool
	// gone marks a webhook that answered 410 Gone: disabled at once.
	gone bool
}

func (e *sendError) Error() string { return e.msg }

func temporary(format string, args ...any) error {
	return &sendError{msg: fmt.Sprintf(format, args...)}
}

func permanent(format string, args ...any) error {
	return &sendError{msg: fmt.Sprintf(format, args...), permanent: true}
}

// deliver sends one delivery and records its outcome.
func (s *Service) deliver(ctx context.Context, d *delivery) {
	s.settle(ctx, d, s.send(ctx, d))
}

// send sends one delivery.
func (s *Service) send(ctx context.Context, d *delivery) error {
	var err error
	switch {
	case d.Event == nil:
		err = permanent("its event is gone")
	case d.Channel == ChannelEmail:
		err = s.sendEmail(ctx, d)
	case d.Channel == ChannelWebhook:
		err = s.sendWebhook(ctx, d)
	case d.Channel == ChannelPush:
		err = s.sendPush(ctx, d)
	case d.Channel == ChannelSlack:
		err = s.sendSlack(ctx, d)
	default:
		err = permanent("unknown channel %q", d.Channel)
	}
	return err
}

// settle records the outcome err of sending d: sent, retried later, or
// given up.
func (s *Service) settle(ctx context.Context, d *delivery, err error) {
	if ctx.Err() != nil {
		// Shutting down: the lease runs out and another round sends it.
		return
	}
	now := s.db.Now()
	var se *sendError
	perm := errors.As(err, &se) && se.permanent
	if err == nil {
		// Recorded with the round's other successes (see recordSent).
		d.sent = true
		s.metrics.sent.WithLabelValues(d.Channel).Inc()
		return
	} else if perm || d.Attempts >= s.cfg.MaxAttempts {
		s.log.Warn("notification not delivered", "delivery", d.ID, "channel", d.Channel, "attempts", d.Attempts, "error", err)
		s.metrics.failed.WithLabelValues(d.Channel).Inc()
		err = s.record(ctx, failedSQL, now, errText(err), d.ID, d.claim)
	} else {
		s.metrics.retried.WithLabelValues(d.Channel).Inc()
		err = s.record(ctx, retryLaterSQL, now.Add(s.backoff(d.Attempts)), errText(err), d.ID, d.claim)
	}
	if err != nil {
		s.log.Warn("notifications: cannot record a delivery's outcome; it will be sent again", "delivery", d.ID, "error", err)
	}
}

func (s *Service) record(ctx context.Context, query string, args ...any) error {
	return s.db.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, query, args...)
		return err
	})
}

// errText is a failure as the delivery log shows it, bounded.
func errText(err error) string {
	msg := err.Error()
	if len(msg) > 500 {
		msg = msg[:500]
	}
	return msg
}

// backoff is the delay before attempt n+1: RetryBase doubled per attempt
// up to RetryMax, of which a random half is taken off ("equal jitter"), so
// that deliveries failing together spread out.
func (s *Service) backoff(attempts int) time.Duration {
	d := s.cfg.RetryBase
	for i := 1; i < attempts && d < s.cfg.RetryMax; i++ {
		d *= 2
	}
	d = min(d, s.cfg.RetryMax)
	return d/2 + rand.N(d/2+1)
}
