package notify

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ctalk/ctalk/db"
)

// A question's notification is not a row that the ask writes: the
// question's own row, stored with its notify mark, is the record (the
// outbox). The worker reads the questions committed since it last read,
// and stores each one's event already expanded, its deliveries and the
// cursor's advance in one transaction: a question is notified once, across
// a crash and across the workers of several replicas, and never one whose
// ask rolled back. Here a question costs the ask nothing but its mark, and
// the worker two inserts. (An event row in the ask's transaction was a
// sixth of the ask's time in SQLite's one writer, and on Postgres, where
// an ask holds its asker's advisory lock until it commits, most of what
// notifications cost an ask.)
//
// What "committed since" means differs by engine. SQLite's one writer
// gives each new row the next rowid, so the order of rowids is the order
// of commits, and the cursor is a rowid. Postgres has no commit order to
// read: each question is marked with its transaction's id, and the cursor
// is a snapshot. A round takes the questions whose transactions the
// cursor's snapshot saw in progress or not yet begun and the round's own
// snapshot sees ended; the round's snapshot becomes the cursor. When a
// round has more than a batch to take, its snapshot stays fixed in the
// cursor (upto) with the position of the batch's last question, until the
// window is taken.

// outboxCursor names the cursor of the questions' outbox in notify_cursors.
const outboxCursor = "questions"

const (
	// outboxSQL reads the cursor and up to $1 questions stored after it,
	// in the order of their commits, in one statement (so one snapshot),
	// as a walk of the rowids from the cursor's, on SQLite. Those without
	// the notify mark (asked with notifications off, or seeded) only move
	// the cursor on, as do those that no longer wait for their recipient
	// when the worker reads them: resolved (whose closing event then had
	// no reminder to end), forwarded (the forward notified the new
	// recipient), or in an exchange of information with the asker, which
	// the recipient began.
	outboxSQL = `SELECT ` + outboxPos + `, rowid, ` + outboxColumns + `
	FROM questions WHERE rowid > ` + outboxPos + ` ORDER BY rowid LIMIT $1`
	outboxPos     = `(SELECT pos FROM notify_cursors WHERE name = '` + outboxCursor + `')`
	outboxColumns = `notify AND status = 'pending' AND events = 0, org_id, id, asker_id, recipient_id, body, created_at`
	// outboxAdvanceSQL moves the cursor from $2 to $1, unless another
	// worker moved it first.
	outboxAdvanceSQL = `UPDATE notify_cursors SET pos = $1 WHERE name = '` + outboxCursor + `' AND pos = $2`

	// outboxPostgresSQL is outboxSQL on Postgres: the cursor's move count,
	// its window's end (the snapshot fixed in upto, else this statement's)
	// whether a window is taken in part, and whether this database's
	// transaction ids are behind the cursor's (see restartOutbox); then up
	// to $1 questions
	// marked in the window after the last batch's, in the order of the
	// outbox's index; a window with none left is one row, of the cursor
	// alone. Without the cursor's row (a schema emptied, as tests do),
	// every question marked is new, from the beginning of the transaction
	// ids, and the first move stores the row. The first condition bounds the index range: from the cursor's
	// snapshot's oldest transaction in progress, or after the last batch's
	// question. since leaves out the questions of an old cluster (see
	// restartOutbox).
	outboxPostgresSQL = `WITH c0 AS (
		SELECT pos, snap, upto, after_xid, after_id, since FROM notify_cursors WHERE name = '` + outboxCursor + `'
		UNION ALL SELECT 0, '1:1:'::pg_snapshot, NULL::pg_snapshot, NULL::xid8, NULL::text, NULL::timestamptz
		WHERE NOT EXISTS (SELECT 1 FROM notify_cursors WHERE name = '` + outboxCursor + `')),
	c AS (SELECT pos, snap, COALESCE(upto, pg_current_snapshot()) AS upto, after_xid, after_id, since,
	             pg_snapshot_xmax(pg_current_snapshot()) < pg_snapshot_xmin(snap) AS behind FROM c0)
	SELECT c.pos, c.upto::text, c.after_xid IS NOT NULL, c.behind, q.*
	FROM c LEFT JOIN LATERAL (SELECT notify_xid::text, ` + outboxColumns + ` FROM questions
		WHERE (notify_xid, id) > (COALESCE(c.after_xid, pg_snapshot_xmin(c.snap)), COALESCE(c.after_id, ''))
		  AND notify_xid < pg_snapshot_xmax(c.upto)
		  AND pg_visible_in_snapshot(notify_xid, c.upto) AND NOT pg_visible_in_snapshot(notify_xid, c.snap)
		  AND (c.since IS NULL OR created_at > c.since)
		ORDER BY notify_xid, id LIMIT $1) q ON TRUE`
	// outboxAdvancePostgresSQL moves the cursor from the move count $1,
	// unless another worker moved it first: with $3 (a transaction id)
	// and $5 (a question id) the last batch's question, a window taken in
	// part, whose end $4 stays fixed; without, the window is taken, and
	// its end is the cursor's snapshot.
	outboxAdvancePostgresSQL = `INSERT INTO notify_cursors AS c (name, pos, moved_at, snap, upto, after_xid, after_id)
	VALUES ('` + outboxCursor + `', $1 + 1, $2,
		CASE WHEN $3::text IS NULL THEN $4::text::pg_snapshot ELSE '1:1:' END,
		CASE WHEN $3::text IS NULL THEN NULL ELSE $4::text::pg_snapshot END,
		$3::text::xid8, $5)
	ON CONFLICT (name) DO UPDATE SET pos = c.pos + 1, moved_at = excluded.moved_at,
		snap = CASE WHEN excluded.after_xid IS NULL THEN excluded.snap ELSE c.snap END,
		upto = excluded.upto, after_xid = excluded.after_xid, after_id = excluded.after_id
	WHERE c.pos = $1`

	// outboxRestartSQL starts the cursor again from the beginning of the
	// transaction ids (see restartOutbox), from the move count $1, at $2,
	// and leaves out from then on the questions asked before it last
	// moved, which the old cluster's worker had read. (Those it had not
	// read, asked in the last instants before the dump, are notified once
	// their transaction ids, of the old count, come into a window of the
	// new, if they still wait.) When another worker moved the cursor
	// first, it changes nothing.
	outboxRestartSQL = `UPDATE notify_cursors SET pos = pos + 1, since = moved_at, moved_at = $2,
		snap = '1:1:', upto = NULL, after_xid = NULL, after_id = NULL
	WHERE name = '` + outboxCursor + `' AND pos = $1`

	// insertExpandedSQL stores an event expanded at once, with its
	// reminder (NULL for none); followed by rows of expandedWidth
	// arguments (see insertRows).
	insertExpandedSQL = `
	INSERT INTO notify_events (` + eventColumns + `, expanded_at, remind_at) VALUES `
	expandedWidth = eventWidth + 2
)

// outboxRow is a question the outbox read: pos, upto and xid say where it
// is (see scanOutbox and scanOutboxPostgres); notify whether it is to be
// notified.
type outboxRow struct {
	cursor, pos          int64
	upto, xid            string
	notify, part, behind bool
	event                *storedEvent
}

// scanOutbox scans a row of outboxSQL.
func scanOutbox(r scanner) (*outboxRow, error) {
	o := newOutboxRow()
	return o, o.scan(r, &o.cursor, &o.pos)
}

// scanOutboxPostgres scans a row of outboxPostgresSQL, which has no
// question (xid is empty) when the window has none left; part tells
// whether the window is taken in part.
func scanOutboxPostgres(r scanner) (*outboxRow, error) {
	o := newOutboxRow()
	e := o.event
	var xid, org, id, asker, to, body sql.NullString
	var notify sql.NullBool
	var at sql.NullTime
	if err := r.Scan(&o.cursor, &o.upto, &o.part, &o.behind, &xid, &notify, &org, &id, &asker, &to, &body, &at); err != nil {
		return nil, fmt.Errorf("scan question: %w", err)
	}
	o.xid, o.notify = xid.String, notify.Bool
	e.OrgID, e.Subject, e.Actor, e.UserID, e.Text, e.CreatedAt = org.String, id.String, asker.String, to.String, body.String, at.Time
	o.asked()
	return o, nil
}

func newOutboxRow() *outboxRow {
	return &outboxRow{event: &storedEvent{Event: Event{Kind: KindQuestion}}}
}

// scan scans a row of where, then outboxColumns.
func (o *outboxRow) scan(r scanner, where ...any) error {
	e := o.event
	if err := r.Scan(append(where, &o.notify, &e.OrgID, &e.Subject, &e.Actor, &e.UserID, &e.Text, &e.CreatedAt)...); err != nil {
		return fmt.Errorf("scan question: %w", err)
	}
	o.asked()
	return nil
}

// asked completes the question's event from what was scanned: due when
// the question was asked, linking to it.
func (o *outboxRow) asked() {
	e := o.event
	e.CreatedAt = e.CreatedAt.UTC()
	e.Due, e.Link = e.CreatedAt, "/inbox/"+e.Subject
}

// readOutbox reads up to expandBatch questions past the cursor, and
// returns them with the statement that moves the cursor past them.
func (s *Service) readOutbox(ctx context.Context) ([]*outboxRow, db.Stmt, error) {
	if s.db.Engine == db.SQLite {
		rows, err := db.All(ctx, s.db, "read new questions", outboxSQL, []any{expandBatch}, scanOutbox)
		if err != nil || len(rows) == 0 {
			return nil, db.Stmt{}, err
		}
		return rows, db.Stmt{Query: outboxAdvanceSQL, Args: []any{rows[len(rows)-1].pos, rows[0].cursor}}, nil
	}
	rows, err := db.All(ctx, s.db, "read new questions", outboxPostgresSQL, []any{expandBatch}, scanOutboxPostgres)
	if err != nil || len(rows) == 0 {
		return nil, db.Stmt{}, err
	}
	last := rows[len(rows)-1]
	var xid, id any // a window taken whole
	if len(rows) == expandBatch {
		xid, id = last.xid, last.event.Subject
	}
	advance := db.Stmt{Query: outboxAdvancePostgresSQL, Args: []any{last.cursor, s.db.Now(), xid, last.upto, id}}
	if last.xid == "" { // a window with none left: no question to take
		if last.behind {
			return nil, db.Stmt{}, s.restartOutbox(ctx, last.cursor)
		}
		if !last.part {
			return nil, db.Stmt{}, nil
		}
		rows = rows[:0]
	}
	return rows, advance, nil
}

// restartOutbox starts the cursor of Postgres, read at the move count pos,
// again from the start, when this database's transaction ids are behind
// the cursor's: a dump restored into another cluster, whose count starts
// again low, so that no question asked since could come after the cursor.
func (s *Service) restartOutbox(ctx context.Context, pos int64) error {
	s.log.Warn("notifications: the database's transaction ids start again below the questions' cursor (restored into another cluster?); reading the questions' outbox from the start")
	return s.db.Write(ctx, func(q db.Querier) error {
		if _, err := q.Exec(ctx, outboxRestartSQL, pos, s.db.Now()); err != nil {
			return fmt.Errorf("restart the questions' notification cursor: %w", err)
		}
		return nil
	})
}

// takeOutbox notifies the questions stored since the last time, up to
// expandBatch of them (see above), and returns how many it read. Should
// their expansion fail, their events are queued instead, to be expanded
// one at a time as any other's (see expandDue), so that one bad question
// holds up no other.
func (s *Service) takeOutbox(ctx context.Context) (int, error) {
	rows, advance, err := s.readOutbox(ctx)
	if err != nil || advance.Query == "" {
		return 0, err
	}
	if len(rows) == 0 {
		// A window taken in part has none left: close it, and take what
		// committed after its end now rather than at the next round, so
		// that none read means none waiting.
		if err := s.db.Tx(ctx, s.storeOutbox(ctx, advance, nil, nil, true)); err != nil {
			return 0, err
		}
		if rows, advance, err = s.readOutbox(ctx); err != nil || advance.Query == "" || len(rows) == 0 {
			return 0, err
		}
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
	if err = s.db.Tx(ctx, s.storeOutbox(ctx, advance, reaching, inputs, true)); err != nil {
		s.log.Warn("notifications: cannot expand new questions; queueing them", "questions", len(reaching), "error", err)
		err = s.db.Tx(ctx, s.storeOutbox(ctx, advance, reaching, inputs, false))
	}
	return len(rows), err
}

// storeOutbox is the transaction that moves the cursor with advance and
// stores the events of the questions it moves past: expanded, or, without
// expand, queued to be expanded as any other's. It stores nothing when
// another worker moved the cursor first.
func (s *Service) storeOutbox(ctx context.Context, advance db.Stmt, events []*storedEvent, in []*expansion, expand bool) func(tx db.Querier) error {
	return func(tx db.Querier) error {
		res, err := tx.Exec(ctx, advance.Query, advance.Args...)
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
	if len(events) == 0 {
		return nil
	}
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
