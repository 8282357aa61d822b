// Package audit records every tool call (who, which tool, the outcome, how
// long it took, the ids it touched) and lets org admins read their org's
// record. It never stores arguments, message text, passwords or tokens.
package audit

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Event is one recorded tool call.
type Event struct {
	ID         int64     `json:"id"`
	At         time.Time `json:"at"`
	OrgID      string    `json:"org_id"`
	UserID     string    `json:"user_id"`
	Tool       string    `json:"tool"`
	Outcome    string    `json:"outcome" jsonschema:"ok, cancelled (by the caller), invalid, unauthorized, forbidden, not_found, conflict, rate_limited, unavailable or internal"`
	DurationMS float64   `json:"duration_ms"`
	IDs        []string  `json:"ids" jsonschema:"message and user ids the call touched"`
	RequestID  string    `json:"request_id"`
	// Factor is how the caller proved who they were (one of the Factor
	// constants), never a secret.
	Factor string `json:"factor,omitempty" jsonschema:"how the caller proved who they were: password_session, passkey_session (signed in with a passkey) or passkey (verified with one just now) for a person in the web app, login_token, personal_token, oauth_token or admin_password (an agent's credential), operator (the server's operator, at its shell), slack_user (a click or a form in Slack by the Slack user linked to the person), or scim_token (the org's identity provider, over SCIM)"`
	// Seq and Hash are the event's place in its org's chain and its hash
	// (see chain.go); zero and empty for events written before the chain.
	Seq  int64  `json:"seq,omitempty" jsonschema:"the event's place in the organization's hash chain, from 1"`
	Hash string `json:"hash,omitempty" jsonschema:"SHA-256 over the previous event's hash and this event's fields, in hex"`
}

// Factors an audited caller proved who they were with: a person signed in
// to the web app, or the credential an agent called with.
const (
	// FactorPasswordSession is a browser session signed in with a password.
	FactorPasswordSession = "password_session"
	// FactorPasskeySession is a browser session signed in with a passkey;
	// FactorPasskey one verified with a passkey within the last minutes.
	FactorPasskeySession = "passkey_session"
	FactorPasskey        = "passkey"
	// FactorLoginToken, FactorPersonalToken and FactorOAuthToken are the
	// tokens an agent calls with; FactorAdminPassword is the org's admin
	// password given to an admin tool.
	FactorLoginToken    = "login_token"
	FactorPersonalToken = "personal_token"
	FactorOAuthToken    = "oauth_token"
	FactorAdminPassword = "admin_password"
	// FactorOperator is the server's operator at its shell (a "ctalk"
	// command run beside the server), who holds its database.
	FactorOperator = "operator"
	// FactorSlackUser is a button or a modal of ctalk's Slack app used by
	// the Slack user the person linked: it proves that Slack user acted,
	// nothing about a passkey.
	FactorSlackUser = "slack_user"
	// FactorSCIMToken is the org's identity provider, calling /scim/v2
	// with a SCIM token an admin made.
	FactorSCIMToken = "scim_token"
)

// Log writes events in batches in the background, so that a tool call does
// not wait for its audit row, and reads them back for org admins.
type Log struct {
	db      *db.DB
	log     *slog.Logger
	events  chan Event
	done    chan struct{}
	closeMu sync.RWMutex
	closed  bool
	// dropped counts events lost because the queue was full: the database
	// was unreachable for longer than the queue lasts.
	dropped  atomic.Int64
	lastWarn atomic.Int64
	// size bounds a batch: batchSize, or batchSizePostgres.
	size int
	// store is insert; tests of the timing replace it, to run on a fake
	// clock without a database.
	store func(context.Context, []Event) error
	// unchained writes events outside any chain, as before there was one:
	// only BenchmarkWrite sets it, to measure what the chain costs.
	unchained bool
	// defaultDays is the retention of orgs that chose none.
	defaultDays atomic.Int64
	// key signs pruning's checkpoints, read once (checkpointKey).
	keyMu sync.Mutex
	key   []byte
}

// batchSize bounds one insert transaction on SQLite, which holds the one
// write lock while it inserts row by row, and batchSizePostgres one insert
// statement on Postgres.
//
// A batch is written once no event arrived for flushDelay, or maxDelay
// after its first event, or when it is full. Waiting for a burst to end,
// rather than a fixed time after its first event, keeps the writes out of
// its way: a post to a channel of 500 waiting members ends 500 calls over
// the tens of milliseconds it takes to answer them, and a batch every
// flushDelay would put several inserts and commits on the database (and on
// the cores the answers need) while the last members still wait; one insert
// after the last costs one.
const (
	batchSize         = 256
	batchSizePostgres = 1024
	flushDelay        = 10 * time.Millisecond
	maxDelay          = 250 * time.Millisecond
)

// NewLog starts the background writer. Close flushes it.
func NewLog(d *db.DB, log *slog.Logger) *Log {
	l := &Log{db: d, log: log, events: make(chan Event, 8192), done: make(chan struct{}), size: batchSize}
	if d.Engine == db.Postgres {
		l.size = batchSizePostgres
	}
	l.store = l.insert
	l.defaultDays.Store(DefaultRetentionDays)
	go l.write()
	return l
}

// Record queues an event without waiting. While the database is down the
// queue holds events for later; should it fill, further events are counted
// and dropped rather than holding up tool calls. After Close it writes the
// event directly.
func (l *Log) Record(e Event) {
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	if l.closed {
		if err := l.store(ctalk.AsOperator(context.Background(), "audit events"), []Event{e}); err != nil {
			l.log.Error("audit write failed", "error", err)
		}
		return
	}
	select {
	case l.events <- e:
	default:
		n := l.dropped.Add(1)
		if now := time.Now().Unix(); now-l.lastWarn.Load() >= 60 {
			l.lastWarn.Store(now)
			l.log.Warn("audit queue full: events dropped while the database is unreachable", "dropped_total", n)
		}
	}
}

// Dropped returns how many events were dropped because the queue was full.
func (l *Log) Dropped() int64 { return l.dropped.Load() }

// Close writes every queued event and stops the writer.
func (l *Log) Close() {
	l.closeMu.Lock()
	if !l.closed {
		l.closed = true
		close(l.events)
	}
	l.closeMu.Unlock()
	<-l.done
}

func (l *Log) write() {
	defer close(l.done)
	batch := make([]Event, 0, l.size)
	giveUp := false
	gather := time.NewTimer(flushDelay)
	defer gather.Stop()
	for e := range l.events {
		batch = append(batch[:0], e)
		// Events arriving until flushDelay passes without one, within
		// maxDelay of the first, share its transaction: under load one write
		// carries dozens of calls instead of one or two, and on SQLite it
		// takes the write lock that much less often from the calls
		// themselves. The timer is set again only when it fires, from the
		// time of the latest event, so that an event costs no timer reset.
		first := time.Now()
		last := first
		gather.Reset(flushDelay)
	drain:
		for len(batch) < l.size {
			select {
			case e, ok := <-l.events:
				if !ok {
					break drain
				}
				batch = append(batch, e)
				last = time.Now()
			case now := <-gather.C:
				wait := min(last.Sub(now)+flushDelay, first.Sub(now)+maxDelay)
				if wait <= 0 {
					break drain
				}
				gather.Reset(wait)
			}
		}
		gather.Stop()
		// A failed batch is retried until the database is back, while new
		// events wait in the queue. Only once the log is closing does it give
		// up, after a few more attempts, and say so.
		backoff := 100 * time.Millisecond
		for attempt := 0; ; attempt++ {
			// A batch holds the events of every organization.
			err := l.store(ctalk.AsOperator(context.Background(), "audit events"), batch)
			if err == nil {
				giveUp = false
				break
			}
			if giveUp || attempt >= 5 && l.isClosed() {
				// Once one batch is given up at shutdown, the rest get one
				// attempt each, so that Close does not wait out every batch.
				giveUp = true
				l.log.Error("audit events lost: the database stayed unreachable through shutdown", "count", len(batch), "error", err)
				break
			}
			if attempt == 0 {
				l.log.Warn("audit write failed; retrying until the database answers", "error", err)
			}
			time.Sleep(backoff)
			backoff = min(backoff*2, 5*time.Second)
		}
	}
}

func (l *Log) isClosed() bool {
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	return l.closed
}

// insertSQL writes one event; on SQLite a batch runs it once per event in
// one transaction, a statement prepared once per connection and kept.
const insertSQL = `INSERT INTO audit_events (at, org_id, user_id, tool, outcome, duration_ms, ids, request_id, factor, seq, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`

// insertManySQL writes a whole batch in one statement on Postgres, one
// array per column, so that every batch, whatever its size, is the same
// statement: one round trip, planned once per connection.
const insertManySQL = `INSERT INTO audit_events (at, org_id, user_id, tool, outcome, duration_ms, ids, request_id, factor, seq, hash)
	SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::text[], $6::float8[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::text[])`

// insert writes a batch in one transaction: it extends each org's chain
// (see chain), inserts the events and adds them to the daily rollup.
func (l *Log) insert(ctx context.Context, batch []Event) error {
	return l.db.Tx(ctx, func(tx db.Querier) error {
		if !l.unchained {
			if err := l.chain(ctx, tx, batch); err != nil {
				return err
			}
		}
		if l.db.Engine == db.Postgres {
			if err := insertMany(ctx, tx, batch); err != nil {
				return err
			}
			return addDaily(ctx, tx, batch)
		}
		for _, e := range batch {
			if _, err := tx.Exec(ctx, insertSQL, e.At, e.OrgID, e.UserID, e.Tool, e.Outcome, e.DurationMS, idsJSON(e.IDs), e.RequestID, e.Factor, e.Seq, e.Hash); err != nil {
				return err
			}
		}
		return addDaily(ctx, tx, batch)
	})
}

func insertMany(ctx context.Context, tx db.Querier, batch []Event) error {
	n := len(batch)
	var (
		at                                 = make([]time.Time, n)
		org, user, tool, outcome, ids, rid = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		factor, hash                       = make([]string, n), make([]string, n)
		dur                                = make([]float64, n)
		seq                                = make([]int64, n)
	)
	for i, e := range batch {
		at[i], org[i], user[i], tool[i], outcome[i], dur[i], ids[i], rid[i], factor[i] = e.At, e.OrgID, e.UserID, e.Tool, e.Outcome, e.DurationMS, idsJSON(e.IDs), e.RequestID, e.Factor
		seq[i], hash[i] = e.Seq, e.Hash
	}
	_, err := tx.Exec(ctx, insertManySQL, at, org, user, tool, outcome, dur, ids, rid, factor, seq, hash)
	return err
}

// idsJSON is the stored form of ids: a JSON array of strings.
func idsJSON(ids []string) string {
	if len(ids) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

// Filter selects events of one org.
type Filter struct {
	UserID  string
	Tool    string
	Outcome string
	Since   time.Time
	Until   time.Time
	// Before is the id of the last event of the previous page: pages run
	// newest first.
	Before int64
	Limit  int
	// after is the id of the last event an export wrote: it reads oldest
	// first.
	after int64
}

// eventColumns are the columns an Event is read from, in scanEvent's order.
const eventColumns = `id, at, org_id, user_id, tool, outcome, duration_ms, ids, request_id, factor, seq, hash`

// where returns the conditions that select orgID's events matching f
// (Limit aside) and their arguments, numbered from $1.
func where(orgID string, f Filter) (string, []any) {
	q := `org_id = $1`
	args := []any{orgID}
	add := func(cond string, v any) {
		args = append(args, v)
		q += " AND " + strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args)))
	}
	if f.UserID != "" {
		add("user_id = ?", f.UserID)
	}
	if f.Tool != "" {
		add("tool = ?", f.Tool)
	}
	if f.Outcome != "" {
		add("outcome = ?", f.Outcome)
	}
	if !f.Since.IsZero() {
		add("at >= ?", f.Since.UTC())
	}
	if !f.Until.IsZero() {
		add("at < ?", f.Until.UTC())
	}
	if f.Before > 0 {
		add("id < ?", f.Before)
	}
	if f.after > 0 {
		add("id > ?", f.after)
	}
	return q, args
}

// scanEvent reads one row of eventColumns, and the ids as stored.
func scanEvent(rows *db.Rows) (e Event, ids string, err error) {
	if err := rows.Scan(&e.ID, &e.At, &e.OrgID, &e.UserID, &e.Tool, &e.Outcome, &e.DurationMS, &ids, &e.RequestID, &e.Factor, &e.Seq, &e.Hash); err != nil {
		return e, ids, err
	}
	e.At = e.At.UTC()
	if json.Unmarshal([]byte(ids), &e.IDs) != nil || e.IDs == nil {
		e.IDs = []string{}
	}
	return e, ids, nil
}

// Events returns orgID's events matching f, newest first, at most f.Limit,
// and whether there are more.
//
// Returns only the database's errors.
func (l *Log) Events(ctx context.Context, orgID string, f Filter) ([]Event, bool, error) {
	cond, args := where(orgID, f)
	args = append(args, f.Limit+1)
	rows, err := l.db.Query(ctx, `SELECT `+eventColumns+` FROM audit_events WHERE `+cond+` ORDER BY id DESC LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	out := []Event{}
	for rows.Next() {
		e, _, err := scanEvent(rows)
		if err != nil {
			return nil, false, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	more := len(out) > f.Limit
	if more {
		out = out[:f.Limit]
	}
	return out, more, nil
}

// ValidOutcome reports whether s is an outcome events can have.
func ValidOutcome(s string) bool {
	switch ctalk.Code(s) {
	case ctalk.EInvalid, ctalk.EUnauthorized, ctalk.EForbidden, ctalk.ENotFound, ctalk.EConflict, ctalk.ERateLimited, ctalk.EUnavailable, ctalk.EInternal:
		return true
	}
	return s == "ok" || s == "cancelled"
}
