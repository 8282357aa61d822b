package notify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ctalk/ctalk/db"
)

// planClaim makes Postgres plan tx's claim as a walk of the queue's index
// in order, which stops at the claim's last row. Without statistics of the
// queue (a burst into a queue that was small, before autovacuum analyzes
// it), its planner takes few rows to be due, and reads every due row into
// a bitmap and sorts them, for each claim: 17 ms a claim at 10,000 due,
// most of a drain's time.
func (s *Service) planClaim(ctx context.Context, tx db.Querier) error {
	if s.db.Engine != db.Postgres {
		return nil
	}
	if _, err := tx.Exec(ctx, planClaimSQL); err != nil {
		return fmt.Errorf("plan the claim: %w", err)
	}
	return nil
}

// claimSQL is a claim's statement: its pick, locked on Postgres, and its
// update of the rows picked (see claimEventsSQL).
func (s *Service) claimSQL(pick, update, tail string) string {
	if s.db.Engine == db.Postgres {
		return pick + claimLock + update + pickedPostgres + tail
	}
	return pick + update + pickedSQLite + tail
}

// expandDue claims due events and expands each into its deliveries.
func (s *Service) expandDue(ctx context.Context) (int, error) {
	now := s.db.Now()
	claim := ""
	if s.db.Engine == db.Postgres {
		claim = newID("c_")
	}
	events, err := s.claimEvents(ctx, now, claim)
	if err != nil || len(events) == 0 {
		return 0, err
	}
	inputs, err := s.expansionInputs(ctx, events)
	if err != nil {
		return len(events), err
	}
	// One transaction for the whole claim, so that a burst costs a commit
	// and a few statements per claim rather than per event; should it
	// fail, each event in a transaction of its own, so that one bad event
	// holds up no other.
	err = s.db.Tx(ctx, func(tx db.Querier) error { return s.expand(ctx, tx, events, claim, inputs) })
	if err == nil {
		return len(events), nil
	}
	var errs []error
	var failed []any
	for i, e := range events {
		err := s.db.Tx(ctx, func(tx db.Querier) error {
			return s.expand(ctx, tx, events[i:i+1], claim, inputs[i:i+1])
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("expand event %s: %w", e.ID, err))
			failed = append(failed, e.ID)
		}
	}
	if claim == "" && len(failed) > 0 {
		// Claimed on Postgres, they wait for their lease to run out.
		if err := s.record(ctx, backOffEventsSQL+"("+db.Placeholders(2, len(failed))+")", append([]any{now.Add(s.cfg.Lease)}, failed...)...); err != nil {
			errs = append(errs, err)
		}
	}
	return len(events), errors.Join(errs...)
}

// claimEvents takes up to expandBatch due events for claim. On Postgres
// it leases them in a transaction of their own, so that the workers of
// other replicas take others. On SQLite, where claim is empty, it only
// reads them: its one writer runs the expansions one at a time, and an
// expansion's mark takes an event only while it is not expanded, so that
// of two workers that read one event, one expands it; a claim then costs
// no write, which was a fifth of its expansion's time (BenchmarkExpand).
func (s *Service) claimEvents(ctx context.Context, now time.Time, claim string) ([]*storedEvent, error) {
	if claim == "" {
		return db.All(ctx, s.db, "read due events", dueEventsSQL, []any{now, expandBatch}, scanEvent)
	}
	var events []*storedEvent
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		if err := s.planClaim(ctx, tx); err != nil {
			return err
		}
		var err error
		events, err = db.All(ctx, tx, "claim events", s.claimSQL(claimEventsSQL, claimEventsUpdate, claimEventsTail), []any{now.Add(s.cfg.Lease), now, claim, expandBatch}, scanEvent)
		return err
	})
	return events, err
}

// expansion is what expanding an event reads: read before its
// transaction, once per org and person of a claim, so that the transaction,
// which holds SQLite's one writer, only writes.
type expansion struct {
	removed  bool // the person is no longer a member
	email    string
	org      OrgSettings
	settings Settings
	hooks    []string // the person's active webhooks
	push     []string // the person's browsers
	slack    bool     // the person linked a Slack user
	orgHooks []string // the org's
	closed   bool     // a reminder's question was resolved
	// lastEmail is when the last mail to email went, zero when none did
	// or it was not read (see mailAt).
	lastEmail time.Time
}

func (s *Service) expansionInputs(ctx context.Context, events []*storedEvent) ([]*expansion, error) {
	orgs := map[string]OrgSettings{}
	orgHooks := map[string][]string{}
	deleting := map[string]bool{}
	people := map[string]*expansion{}
	out := make([]*expansion, len(events))
	for i, e := range events {
		org, ok := orgs[e.OrgID]
		if !ok {
			part, err := s.orgPart(ctx, e.OrgID)
			if err != nil {
				return nil, err
			}
			org, orgs[e.OrgID], orgHooks[e.OrgID] = part.org, part.org, part.orgHooks
			if deleting[e.OrgID], err = s.orgDeleting(ctx, e.OrgID); err != nil {
				return nil, err
			}
		}
		key := e.OrgID + "\x00" + e.UserID
		p, ok := people[key]
		if !ok {
			var err error
			if p, err = s.personInputs(ctx, e.OrgID, e.UserID); err != nil {
				return nil, err
			}
			people[key] = p
		}
		x := *p
		x.org, x.orgHooks = org, orgHooks[e.OrgID]
		if deleting[e.OrgID] {
			// Paused as the person could: nothing but the notices that go
			// whatever the settings (see Settings.channelsFor).
			x.settings.Paused = true
		}
		if e.Kind == KindReminder || e.Kind == KindStillWaiting {
			var closed int
			reminded := e.UserID
			if e.Kind == KindStillWaiting {
				reminded = e.Actor
			}
			if err := s.db.QueryRow(ctx, closedSubjectSQL, e.OrgID, e.Subject, reminded).Scan(&closed); err != nil {
				return nil, fmt.Errorf("check question closed: %w", err)
			}
			x.closed = closed > 0
		}
		out[i] = &x
	}
	return out, nil
}

// personInputs is what expanding an event reads of the person it goes to.
func (s *Service) personInputs(ctx context.Context, orgID, userID string) (*expansion, error) {
	p := &expansion{}
	_, email, err := s.person(ctx, orgID, userID)
	switch {
	case err != nil && notFoundErr(err):
		p.removed = true
	case err != nil:
		return nil, fmt.Errorf("look up %s: %w", userID, err)
	}
	p.email = email
	part, err := s.personPart(ctx, orgID, userID)
	if err != nil {
		return nil, err
	}
	p.settings, p.hooks, p.push, p.slack = part.settings, part.hooks, part.push, part.slack
	if err := s.pauseAway(ctx, orgID, userID, &p.settings); err != nil {
		return nil, err
	}
	if email != "" && s.EmailEnabled() && s.cfg.DigestWindow > 0 {
		if p.lastEmail, err = s.lastEmail(ctx, orgID, userID, email); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// mailAt is when a mail to the person in describes, due at at, goes: once
// the digest window since their last mail ends, so that a mail that would
// only be held for the digest is not claimed before then (the send checks
// the window again).
func (s *Service) mailAt(at time.Time, in *expansion) time.Time {
	if until := in.lastEmail.Add(s.cfg.DigestWindow); !in.lastEmail.IsZero() && at.Before(until) {
		return until
	}
	return at
}

// expandBatch is how many events a worker claims and expands at once.
const expandBatch = 100

// storedEvent is an Event as queued.
type storedEvent struct {
	Event
	ID        string
	CreatedAt time.Time
	// org is its org's settings, when read with its claim (see loadOrgs),
	// and deleting whether its deletion is scheduled.
	org      *OrgSettings
	deleting bool
}

func scanEvent(r scanner) (*storedEvent, error) {
	e := &storedEvent{}
	var kind string
	if err := r.Scan(&e.ID, &e.OrgID, &e.UserID, &kind, &e.Subject, &e.Actor, &e.Text, &e.Link, &e.Urgent, &e.CreatedAt, &e.Due); err != nil {
		return nil, fmt.Errorf("scan event: %w", err)
	}
	e.Kind = Kind(kind)
	e.CreatedAt, e.Due = e.CreatedAt.UTC(), e.Due.UTC()
	return e, nil
}

// expand turns claimed events into their deliveries, by what in read of
// each one's person (see expansion), and keeps what follows from them (a
// question's reminder on its event, a reminder's note to the asker as an
// event of its own), in tx, which also marks them expanded: each happens
// once, or not at all and again later. It is a few statements however
// many events on Postgres: the mark, the follow-ups' reach read, the
// reminders' update, the notes' insert and the deliveries' insert.
func (s *Service) expand(ctx context.Context, tx db.Querier, events []*storedEvent, claim string, in []*expansion) error {
	now := s.db.Now()
	ours, err := s.markExpanded(ctx, tx, events, claim, now)
	if err != nil {
		return err
	}
	x, err := s.expansion(ctx, tx, events, ours, in, now)
	if err != nil {
		return err
	}
	if err := s.setReminders(ctx, tx, x.remind, x.at); err != nil {
		return err
	}
	return s.writeExpansion(ctx, tx, x)
}

// expanded is what the expansion of events writes: their deliveries (rows
// of insertDeliverySQL), the reminders kept on them (the events of remind,
// each due at its time in at), and the notes they queue.
type expanded struct {
	deliveries []any
	remind     []string
	at         []time.Time
	notes      []Event
}

// expansion is what expanding events writes, those of ours, at now, by
// what in read of each one's person (see expansion).
func (s *Service) expansion(ctx context.Context, tx db.Querier, events []*storedEvent, ours map[string]bool, in []*expansion, now time.Time) (*expanded, error) {
	x := &expanded{}
	var follow []Event
	var from []string // the id of the event each of follow follows
	for i, e := range events {
		if !ours[e.ID] || in[i].removed || in[i].closed {
			continue // another worker's lease now, or nothing to send
		}
		for _, f := range followUps(e, in[i], now) {
			follow, from = append(follow, f), append(from, e.ID)
		}
		at := in[i].settings.sendAt(now, e.Urgent)
		for j, t := range s.destinations(e.Kind, e.UserID, in[i]) {
			due := at
			if t.channel == ChannelEmail {
				due = s.mailAt(at, in[i])
			}
			x.deliveries = append(x.deliveries, fmt.Sprintf("%s.%d", e.ID, j+1), e.ID, e.OrgID, e.UserID, t.channel, t.target, due, now)
		}
	}
	reach, err := s.reachable(ctx, tx, follow)
	if err != nil {
		return nil, err
	}
	for i, f := range follow {
		switch {
		case !reach[i]:
		case f.Kind == KindReminder:
			x.remind, x.at = append(x.remind, from[i]), append(x.at, f.Due.UTC())
		default:
			x.notes = append(x.notes, f)
		}
	}
	return x, nil
}

// writeExpansion queues x's notes and deliveries in tx.
func (s *Service) writeExpansion(ctx context.Context, tx db.Querier, x *expanded) error {
	if len(x.notes) > 0 {
		if err := s.insertEvents(ctx, tx, x.notes); err != nil {
			return err
		}
	}
	if err := s.insertRows(ctx, tx, insertDeliverySQL, 8, x.deliveries); err != nil {
		return fmt.Errorf("queue deliveries: %w", err)
	}
	return nil
}

// setReminders keeps the reminder of each event of ids, due at its time
// in at, on the event, in tx: the worker queues it once it is due (see
// remindDue). It costs no row, nor, on SQLite, more than an update of a
// row the expansion's mark just wrote.
func (s *Service) setReminders(ctx context.Context, tx db.Querier, ids []string, at []time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	if s.db.Engine == db.Postgres {
		if _, err := tx.Exec(ctx, setRemindsSQL, ids, at); err != nil {
			return fmt.Errorf("keep reminders: %w", err)
		}
		return nil
	}
	for i, id := range ids {
		if _, err := tx.Exec(ctx, setRemindSQL, at[i], id); err != nil {
			return fmt.Errorf("keep reminders: %w", err)
		}
	}
	return nil
}

// remindDue queues the reminders that are due, taken off their questions'
// events, each once: in one transaction, up to expandBatch of them, as
// events due now that the next expansion expands like any other. It
// returns how many it took.
func (s *Service) remindDue(ctx context.Context) (int, error) {
	now := s.db.Now()
	n := 0
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		events, err := db.All(ctx, tx, "take due reminders", s.claimSQL(remindPickSQL, remindUpdateSQL, remindTailSQL), []any{now, expandBatch}, scanEvent)
		if err != nil {
			return err
		}
		n = len(events)
		reminders := make([]Event, len(events))
		for i, e := range events {
			reminders[i] = e.Event
			reminders[i].Kind, reminders[i].Due = KindReminder, now
		}
		return s.Queue(ctx, tx, reminders...)
	})
	return n, err
}

// markExpanded marks the claimed events expanded, in one statement, and
// returns those that were still the claim's: an event another worker
// took over meanwhile is not.
func (s *Service) markExpanded(ctx context.Context, tx db.Querier, events []*storedEvent, claim string, now time.Time) (map[string]bool, error) {
	args := []any{now, claim}
	for _, e := range events {
		args = append(args, e.ID)
	}
	ids, err := readIDs(ctx, tx, "mark events expanded", expandEventsSQL+"("+db.Placeholders(3, len(events))+") RETURNING id", args...)
	if err != nil {
		return nil, err
	}
	ours := make(map[string]bool, len(ids))
	for _, id := range ids {
		ours[id] = true
	}
	return ours, nil
}

// followUps are the events an expanded event queues: a question's
// reminder to its recipient, after the org's reminder time counted in the
// recipient's working hours; a reminder's note to the asker, as long again.
func followUps(e *storedEvent, in *expansion, now time.Time) []Event {
	switch {
	case e.Kind == KindQuestion && in.org.Reminder > 0:
		r := e.Event
		r.Kind, r.Due = KindReminder, in.settings.afterWorking(e.CreatedAt, in.org.Reminder)
		return []Event{r}
	case e.Kind == KindReminder && e.Actor != "":
		r := e.Event
		r.Kind, r.UserID, r.Actor, r.Due = KindStillWaiting, e.Actor, e.UserID, in.settings.afterWorking(now, in.org.Reminder)
		r.Link = "/asked#q-" + e.Subject
		return []Event{r}
	}
	return nil
}

// destination is where one delivery goes: a channel and its target (an
// address, a webhook's or a browser's id).
type destination struct{ channel, target string }

// destinations are the deliveries an event of kind k to userID expands
// into, by what in read of the person: each chosen channel's targets, and
// the org's webhooks for the kinds they take.
func (s *Service) destinations(k Kind, userID string, in *expansion) []destination {
	var out []destination
	for _, ch := range in.settings.channelsFor(k, s.EmailEnabled()) {
		switch ch {
		case ChannelEmail:
			if in.email != "" && s.EmailEnabled() {
				out = append(out, destination{ChannelEmail, in.email})
			}
		case ChannelWebhook, ChannelPush:
			targets := in.hooks
			if ch == ChannelPush {
				targets = in.push
			}
			for _, id := range targets {
				out = append(out, destination{ch, id})
			}
		}
	}
	if in.slack && slackKind(k) && !in.settings.Paused && s.slack.Load() != nil {
		out = append(out, destination{ChannelSlack, userID})
	}
	if orgWide(k) && userID != "" {
		for _, id := range in.orgHooks {
			out = append(out, destination{ChannelWebhook, id})
		}
	}
	return out
}

// orgWide kinds also go to the org's webhooks, without their words (see
// sendWebhook): that a question waits for someone, was answered or
// declined, or that an urgent post came; never a person's approvals.
func orgWide(k Kind) bool {
	return k == KindQuestion || k == KindAnswered || k == KindDeclined || k == KindUrgent
}
