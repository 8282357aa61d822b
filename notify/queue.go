package notify

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
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
		return queryAll(ctx, s.db, "read due events", dueEventsSQL, []any{now, expandBatch}, scanEvent)
	}
	var events []*storedEvent
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		if err := s.planClaim(ctx, tx); err != nil {
			return err
		}
		var err error
		events, err = queryAll(ctx, tx, "claim events", s.claimSQL(claimEventsSQL, claimEventsUpdate, claimEventsTail), []any{now.Add(s.cfg.Lease), now, claim, expandBatch}, scanEvent)
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
	orgHooks []string // the org's
	closed   bool     // a reminder's question was resolved
	// lastEmail is when the last mail to email went, zero when none did
	// or it was not read (see mailAt).
	lastEmail time.Time
}

func (s *Service) expansionInputs(ctx context.Context, events []*storedEvent) ([]*expansion, error) {
	orgs := map[string]OrgSettings{}
	orgHooks := map[string][]string{}
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
	p.settings, p.hooks, p.push = part.settings, part.hooks, part.push
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
	// org is its org's settings, when read with its claim (see loadOrgs).
	org *OrgSettings
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
		events, err := queryAll(ctx, tx, "take due reminders", s.claimSQL(remindPickSQL, remindUpdateSQL, remindTailSQL), []any{now, expandBatch}, scanEvent)
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

// maxInsertRows bounds the rows of one multi-row insert, so that its
// arguments stay well within both engines' limits.
const maxInsertRows = 500

// insertRows inserts rows, the arguments of its rows one after another,
// width to a row, with insert (INSERT ... VALUES and no row): as few
// statements as maxInsertRows allows on Postgres, where each is a round
// trip; one row a statement on SQLite, where statements in one process
// cost no round trip. A multi-row insert there costs more than its rows
// one by one (SQLite keeps a statement journal for a statement that
// writes more than one row, so that it could undo it alone):
// BenchmarkExpand measured a claim's expansion at 114 µs an event in
// inserts of 128 arguments, 81 µs in inserts of a row; ctalk-bench's ask
// phase with notifications on, whose worker stores SQLite's outbox of
// questions, at 0.83x to 0.87x of off with inserts of up to 500 rows,
// against 0.91x to 0.94x with a row a statement, side by side; rows as a
// JSON array read by json_each in one statement took 15% more of the
// writer's time than a row a statement.
func (s *Service) insertRows(ctx context.Context, tx db.Querier, insert string, width int, rows []any) error {
	per := maxInsertRows
	if s.db.Engine == db.SQLite {
		per = 1
	}
	for len(rows) > 0 {
		n := min(len(rows)/width, per)
		var q strings.Builder
		q.WriteString(insert)
		for i := range n {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(" + db.Placeholders(i*width+1, width) + ")")
		}
		if _, err := tx.Exec(ctx, q.String(), rows[:n*width]...); err != nil {
			return err
		}
		rows = rows[n*width:]
	}
	return nil
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

func activeWebhooks(ctx context.Context, r db.Reader, orgID, userID string) ([]string, error) {
	return readIDs(ctx, r, "read webhooks", activeWebhooksSQL, orgID, userID)
}

// readIDs reads the one column of query's rows; what names the read in
// its error.
func readIDs(ctx context.Context, r db.Reader, what, query string, args ...any) ([]string, error) {
	return queryAll(ctx, r, what, query, args, func(row scanner) (id string, err error) {
		return id, row.Scan(&id)
	})
}

type scanner interface{ Scan(...any) error }

// queryAll reads every row of query with scan; what names the read in its
// error.
func queryAll[T any](ctx context.Context, r db.Reader, what, query string, args []any, scan func(scanner) (T, error)) ([]T, error) {
	rows, err := r.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// deleteOne runs a delete of one row of the caller's, and returns
// ENotFound naming what when there was none.
func (s *Service) deleteOne(ctx context.Context, what, query string, args ...any) error {
	var n int64
	err := s.db.Write(ctx, func(q db.Querier) error {
		res, err := q.Exec(ctx, query, args...)
		if err == nil {
			n, _ = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("delete %s: %w", what, err)
	}
	if n == 0 {
		return notFound(what)
	}
	return nil
}

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
	for _, group := range s.holdDigests(ctx, s.groupEmails(ds)) {
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
		}
		e.org = orgs[e.OrgID]
	}
	return nil
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

func (s *Service) measureQueueAge(ctx context.Context) {
	now := s.db.Now()
	var oldest db.NullTime
	if err := s.db.QueryRow(ctx, queueAgeSQL, now).Scan(&oldest); err != nil {
		return
	}
	age := 0.0
	if oldest.Valid {
		age = now.Sub(oldest.Time).Seconds()
	}
	s.metrics.queueAge.Set(age)
}

// Retention is how long expanded events and their deliveries are kept (the
// delivery log).
const Retention = 30 * 24 * time.Hour

// Prune deletes the deliveries finished longer than Retention ago, and the
// events left with none pending. Run calls it hourly.
//
// Returns only the database's errors.
func (s *Service) Prune(ctx context.Context) error {
	return s.db.Write(ctx, func(q db.Querier) error {
		before := s.db.Now().Add(-Retention)
		if _, err := q.Exec(ctx, pruneDeliveriesSQL, before); err != nil {
			return fmt.Errorf("prune deliveries: %w", err)
		}
		if _, err := q.Exec(ctx, pruneEventsSQL, before); err != nil {
			return fmt.Errorf("prune events: %w", err)
		}
		return nil
	})
}

func notFoundErr(err error) bool {
	return errors.Is(err, sql.ErrNoRows) || ctalk.ErrorCode(err) == ctalk.ENotFound
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
