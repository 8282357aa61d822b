package channels

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// cursorDelay is how long a batch of read-cursor advances waits, after the
// latest, for more to share its write; cursorMaxDelay bounds how long a
// batch that keeps growing may wait in all.
//
// Waiting for the advances to stop rather than a fixed time after the
// first keeps the write out of a fan-out's way: the 500 waiters woken by one
// post advance their cursors over the tens of milliseconds it takes to
// answer them all, and a write every cursorDelay would put several
// statements on the database (and on the cores the answers need) while the
// last waiters still wait; one write when they are done costs one.
const (
	cursorDelay    = 5 * time.Millisecond
	cursorMaxDelay = 100 * time.Millisecond
)

// cursorRetries bounds how often a failed batch of advances is written
// again before it is dropped.
const cursorRetries = 8

// cursorKey names one member's read cursor of one channel.
type cursorKey struct{ org, user, channel string }

// cursors gathers the read-cursor advances of Messages and of waits after a
// sequence number, and writes them in one transaction (one statement on
// Postgres) once none arrived for cursorDelay, or cursorMaxDelay after the
// first, instead of one write per reader:
// a post to a channel of 500 waiting members costs one write, not 500
// writes queued behind SQLite's one writer or 500 flushed commits on
// Postgres.
//
// Advances only ever move a cursor forward, so gathering keeps the highest
// per cursor and the order of writes does not matter. Delivery through them
// is at least once: the messages are handed over before their advance
// commits, and a crash in between, or a database that stays unreachable
// through cursorRetries attempts, leaves those messages unread, to be handed
// over again, never lost. settle writes a caller's pending advances at once
// before anything that reads their cursors in this process (unread counts,
// get_unread), so that a caller never sees its own read as unread here;
// another replica may see it up to cursorMaxDelay late.
type cursors struct {
	db *db.DB
	// delay and maxDelay are cursorDelay and cursorMaxDelay; tests lengthen
	// them to stand for a crash before the write.
	delay, maxDelay time.Duration
	// store is write; tests of the timing replace it, to run on a fake
	// clock without a database.
	store func(context.Context, map[cursorKey]int64) error

	mu      sync.Mutex
	pending map[cursorKey]int64
	// first and last are when the first and the latest advance of the
	// pending batch arrived.
	first, last time.Time
	// scheduled says that a flush is due; closed that close ran, after
	// which advances are written at once.
	scheduled, closed bool
	// flushing is held by a flush from taking the batch until it is
	// written, so that close's flush and settle come after one in
	// progress.
	flushing sync.Mutex
}

func newCursors(d *db.DB) *cursors {
	w := &cursors{db: d, delay: cursorDelay, maxDelay: cursorMaxDelay, pending: map[cursorKey]int64{}}
	w.store = w.write
	return w
}

// advance records that the reader c has read channel up to seq.
func (w *cursors) advance(ctx context.Context, c ctalk.Caller, channel string, seq int64) error {
	k := cursorKey{c.OrgID, c.UserID, channel}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.store(ctx, map[cursorKey]int64{k: seq})
	}
	now := time.Now()
	if len(w.pending) == 0 {
		w.first = now
	}
	w.last = now
	if seq > w.pending[k] {
		w.pending[k] = seq
	}
	if !w.scheduled {
		w.scheduled = true
		time.AfterFunc(min(w.delay, w.maxDelay), w.due)
	}
	w.mu.Unlock()
	return nil
}

// due runs when the batch may be ready: it writes it if no advance came
// for delay, or it has waited maxDelay since its first; otherwise it looks
// again when one of those will be true. Checking the time of the latest
// advance here, rather than resetting a timer on every advance, keeps an
// advance to a lock and a clock read.
func (w *cursors) due() {
	w.mu.Lock()
	if len(w.pending) > 0 && !w.closed {
		now := time.Now()
		if wait := min(w.last.Sub(now)+w.delay, w.first.Sub(now)+w.maxDelay); wait > 0 {
			time.AfterFunc(wait, w.due)
			w.mu.Unlock()
			return
		}
	}
	w.mu.Unlock()
	w.flush(0)
}

// retryLocked schedules the next attempt of a failed flush.
func (w *cursors) retryLocked(after time.Duration, attempt int) {
	if w.scheduled {
		return
	}
	w.scheduled = true
	time.AfterFunc(after, func() { w.flush(attempt) })
}

// flush writes every pending advance in one transaction; on failure it puts
// them back and tries again later, up to cursorRetries times.
func (w *cursors) flush(attempt int) {
	w.flushing.Lock()
	defer w.flushing.Unlock()
	w.mu.Lock()
	batch := w.pending
	w.pending = map[cursorKey]int64{}
	w.scheduled = false
	w.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	// One batch holds the cursors of every organization's readers.
	ctx, cancel := context.WithTimeout(ctalk.AsOperator(context.Background(), "channel read cursors"), 10*time.Second)
	err := w.store(ctx, batch)
	cancel()
	if err == nil || attempt+1 >= cursorRetries {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, seq := range batch {
		if seq > w.pending[k] {
			w.pending[k] = seq
		}
	}
	if !w.closed {
		w.retryLocked(min(100*time.Millisecond<<attempt, 5*time.Second), attempt+1)
	}
}

// settle writes the pending advances of the caller at once. A flush in
// progress may hold some of them, taken from pending but not yet written:
// settle waits for it first, so that what it returns after is written (or
// put back by a failed flush, and written here).
func (w *cursors) settle(ctx context.Context, c ctalk.Caller) error {
	mine := map[cursorKey]int64{}
	w.flushing.Lock()
	w.mu.Lock()
	for k, seq := range w.pending {
		if k.org == c.OrgID && k.user == c.UserID {
			mine[k] = seq
			delete(w.pending, k)
		}
	}
	w.mu.Unlock()
	w.flushing.Unlock()
	if len(mine) == 0 {
		return nil
	}
	if err := w.store(ctx, mine); err != nil {
		w.mu.Lock()
		for k, seq := range mine {
			if seq > w.pending[k] {
				w.pending[k] = seq
			}
		}
		w.mu.Unlock()
		return err
	}
	return nil
}

// close writes what is pending, once, after a flush in progress, and
// makes later advances write at once. A flush still scheduled finds nothing
// left to write.
func (w *cursors) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.flush(cursorRetries - 1)
}

// write moves the cursors of batch forward, never back, in one
// transaction. Rows are taken in one order (org, user, channel), the order
// in which a claim locks a user's cursors, so that a batch and a claim never
// wait for each other in a cycle.
func (w *cursors) write(ctx context.Context, batch map[cursorKey]int64) error {
	keys := slices.SortedFunc(func(yield func(cursorKey) bool) {
		for k := range batch {
			if !yield(k) {
				return
			}
		}
	}, cmpKeys)
	if w.db.Engine == db.Postgres {
		orgs, users, chans, seqs := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys)), make([]int64, len(keys))
		for i, k := range keys {
			orgs[i], users[i], chans[i], seqs[i] = k.org, k.user, k.channel, batch[k]
		}
		// One statement, committed on its own: one round trip.
		return w.db.Write(ctx, func(q db.Querier) error {
			_, err := q.Exec(ctx, advanceReadsPostgresSQL, orgs, users, chans, seqs)
			return err
		})
	}
	return w.db.Tx(ctx, func(tx db.Querier) error {
		for _, k := range keys {
			if _, err := tx.Exec(ctx, advanceReadSQL, k.org, k.channel, k.user, batch[k]); err != nil {
				return err
			}
		}
		return nil
	})
}

func cmpKeys(a, b cursorKey) int {
	if c := strings.Compare(a.org, b.org); c != 0 {
		return c
	}
	if c := strings.Compare(a.user, b.user); c != 0 {
		return c
	}
	return strings.Compare(a.channel, b.channel)
}
