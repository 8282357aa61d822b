package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/ctalk/ctalk/db"
)

// On SQLite a question's notification is not a row that the ask writes:
// the question's own row, stored with its notify mark, is the record (the
// outbox). The worker reads the questions stored after its cursor, in rowid
// order, which on SQLite, whose one writer gives each new row the next
// rowid, is the order of their commits, so that a question committed later
// never has a smaller rowid than one the cursor passed. It stores each
// one's event already expanded, its deliveries and the cursor's advance in
// one transaction: a question is notified once, across a crash and across
// the workers of several processes on one file, and never one whose ask
// rolled back. An event row and its index entries in the ask's transaction
// were a sixth of the ask's time in SQLite's one writer, and the expansion's
// mark and reminder updates most of the worker's; here a question costs
// the ask nothing and the worker two inserts. Postgres, whose ask is one
// round trip with its event, writes the event with the question.

// outboxCursor names the cursor of the questions' outbox in notify_cursors.
const outboxCursor = "questions"

const (
	// outboxSQL reads the cursor and up to $1 questions stored after it,
	// in the order of their commits, in one statement (so one snapshot),
	// as a walk of the rowids from the cursor's. Those without the notify
	// mark (asked with notifications off, or seeded) only move the cursor
	// on, as do those that no longer wait for their recipient when the
	// worker reads them: resolved (whose closing event then had no
	// reminder to end), forwarded (the forward notified the new
	// recipient), or in an exchange of information with the asker, which
	// the recipient began.
	outboxSQL = `SELECT ` + outboxPos + `, rowid, notify AND status = 'pending' AND events = 0, org_id, id, asker_id, recipient_id, body, created_at
	FROM questions WHERE rowid > ` + outboxPos + ` ORDER BY rowid LIMIT $1`
	outboxPos = `(SELECT pos FROM notify_cursors WHERE name = '` + outboxCursor + `')`
	// outboxAdvanceSQL moves the cursor from $2 to $1, unless another
	// worker moved it first.
	outboxAdvanceSQL = `UPDATE notify_cursors SET pos = $1 WHERE name = '` + outboxCursor + `' AND pos = $2`
	// insertExpandedSQL stores an event expanded at once, with its
	// reminder (NULL for none); followed by rows of expandedWidth
	// arguments (see insertRows).
	insertExpandedSQL = `
	INSERT INTO notify_events (` + eventColumns + `, expanded_at, remind_at) VALUES `
	expandedWidth = eventWidth + 2
)

// outboxRow is a question the outbox read, after the cursor at cursor.
type outboxRow struct {
	cursor, pos int64
	notify      bool
	event       *storedEvent
}

func scanOutbox(r scanner) (*outboxRow, error) {
	o := &outboxRow{event: &storedEvent{Event: Event{Kind: KindQuestion}}}
	e := o.event
	if err := r.Scan(&o.cursor, &o.pos, &o.notify, &e.OrgID, &e.Subject, &e.Actor, &e.UserID, &e.Text, &e.CreatedAt); err != nil {
		return nil, fmt.Errorf("scan question: %w", err)
	}
	e.CreatedAt = e.CreatedAt.UTC()
	e.Due, e.Link = e.CreatedAt, "/inbox/"+e.Subject
	return o, nil
}

// takeOutbox notifies the questions stored since the last time, up to
// expandBatch of them, on SQLite (see above), and returns how many it read.
// Should their expansion fail, their events are queued instead, to be
// expanded one at a time as any other's (see expandDue), so that one bad
// question holds up no other.
func (s *Service) takeOutbox(ctx context.Context) (int, error) {
	if s.db.Engine != db.SQLite {
		return 0, nil
	}
	rows, err := queryAll(ctx, s.db, "read new questions", outboxSQL, []any{expandBatch}, scanOutbox)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	var events []*storedEvent
	var asked []Event
	for _, r := range rows {
		if r.notify {
			events, asked = append(events, r.event), append(asked, r.event.Event)
		}
	}
	reach, err := s.reachable(ctx, s.db, asked)
	if err != nil {
		return 0, err
	}
	reaching := events[:0]
	for i, e := range events {
		if reach[i] {
			e.ID = eventID()
			reaching = append(reaching, e)
		}
	}
	inputs, err := s.expansionInputs(ctx, reaching)
	if err != nil {
		return 0, err
	}
	from, to := rows[0].cursor, rows[len(rows)-1].pos
	if err = s.db.Tx(ctx, s.storeOutbox(ctx, from, to, reaching, inputs, true)); err != nil {
		s.log.Warn("notifications: cannot expand new questions; queueing them", "questions", len(reaching), "error", err)
		err = s.db.Tx(ctx, s.storeOutbox(ctx, from, to, reaching, inputs, false))
	}
	return len(rows), err
}

// storeOutbox is the transaction that moves the cursor from from to to and
// stores the events of the questions between: expanded, or, without
// expand, queued to be expanded as any other's. It stores nothing when
// another worker moved the cursor first.
func (s *Service) storeOutbox(ctx context.Context, from, to int64, events []*storedEvent, in []*expansion, expand bool) func(tx db.Querier) error {
	return func(tx db.Querier) error {
		res, err := tx.Exec(ctx, outboxAdvanceSQL, to, from)
		if err != nil {
			return fmt.Errorf("move the questions' notification cursor: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // another worker took them
		}
		if expand {
			return s.expandNew(ctx, tx, events, in)
		}
		if len(events) == 0 {
			return nil
		}
		queued := make([]Event, len(events))
		for i, e := range events {
			queued[i] = e.Event
		}
		return s.insertEvents(ctx, tx, queued)
	}
}

// expandNew is expand of events not stored yet, an outbox's: it stores
// each expanded, with its reminder on it, then its deliveries.
func (s *Service) expandNew(ctx context.Context, tx db.Querier, events []*storedEvent, in []*expansion) error {
	now := s.db.Now()
	ours := make(map[string]bool, len(events))
	for _, e := range events {
		ours[e.ID] = true
	}
	x, err := s.expansion(ctx, tx, events, ours, in, now)
	if err != nil {
		return err
	}
	remind := make(map[string]time.Time, len(x.remind))
	for i, id := range x.remind {
		remind[id] = x.at[i]
	}
	rows := make([]any, 0, expandedWidth*len(events))
	for _, e := range events {
		var at any
		if t, ok := remind[e.ID]; ok {
			at = t
		}
		rows = append(rows, e.ID, e.OrgID, e.UserID, string(e.Kind), e.Subject, e.Actor, e.Text, e.Link, e.Urgent, e.CreatedAt, e.Due, now, at)
	}
	if err := s.insertRows(ctx, tx, insertExpandedSQL, expandedWidth, rows); err != nil {
		return fmt.Errorf("store expanded events: %w", err)
	}
	return s.writeExpansion(ctx, tx, x)
}
