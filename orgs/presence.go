package orgs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Presence states, as list_users, get_user_profile and channel member lists
// show them.
const (
	// PresenceWaiting: an agent of theirs is blocked in a wait now, on any
	// replica.
	PresenceWaiting = "waiting"
	// PresenceActive: they made a call within ActiveWindow.
	PresenceActive = "active"
	// PresenceAway: neither.
	PresenceAway = "away"
)

// Presence timing.
const (
	// ActiveWindow is how recent a call makes a user active.
	ActiveWindow = 5 * time.Minute
	// SeenEvery is the most often one replica writes a user's last_seen_at.
	SeenEvery = time.Minute
	// WaitTTL is how far ahead a wait's mark reaches; it is refreshed every
	// WaitTTL/3 while the wait lasts, so a mark outlives a dead replica by
	// WaitTTL at most.
	WaitTTL = 90 * time.Second
	// waitGrace keeps the mark after a user's last wait on this replica
	// ends, for the next wait of an agent that waits in a loop: the loop
	// then costs no writes.
	waitGrace = 3 * time.Second
)

// PresenceOf is a user's presence given their last call and the latest end
// of their wait marks.
func PresenceOf(lastSeen, waitUntil db.NullTime, now time.Time) string {
	switch {
	case waitUntil.Valid && waitUntil.Time.After(now):
		return PresenceWaiting
	case lastSeen.Valid && now.Sub(lastSeen.Time) < ActiveWindow:
		return PresenceActive
	}
	return PresenceAway
}

// Presence records when users are seen and when their agents wait, cheaply:
// at most one write per user per SeenEvery for calls, and for waits one
// write when the first wait of a user starts on this replica, one per
// WaitTTL/3 while waits last, one after the last ends.
type Presence struct {
	db      *db.DB
	log     *slog.Logger
	replica string
	mu      sync.Mutex
	seen    map[string]time.Time
	waits   map[string]*waitMark
	// writes queues the presence writes for Run, which makes them in
	// order: a mark and the clear that follows it must not swap.
	writes chan presenceWrite
}

type presenceWrite struct {
	what string
	// order is the write's place in a batch: the user's key, then its
	// table (see runBatch).
	order string
	stmts []stmt
}

type stmt struct {
	query string
	args  []any
}

// waitMark is this replica's mark of a user's waits.
type waitMark struct {
	orgID, userID string
	count         int
	timer         *time.Timer
}

// NewPresence returns a Presence over d, as one replica of its own.
func NewPresence(d *db.DB, log *slog.Logger) *Presence {
	var b [8]byte
	rand.Read(b[:])
	return &Presence{db: d, log: log, replica: hex.EncodeToString(b[:]), seen: map[string]time.Time{}, waits: map[string]*waitMark{},
		writes: make(chan presenceWrite, 4096)}
}

// presenceBatch bounds how many queued writes share one transaction.
const presenceBatch = 256

// Run makes the queued presence writes, in order, until ctx ends: those
// queued together in one transaction. The waits that 500 agents start
// together queue 500 marks (and, once a minute, 500 last-seen writes), and
// their 30-second refreshes come due together; written one statement at a
// time, each committing on its own, they put a thousand commits on the
// database in the second after, while the same agents are being answered.
func (p *Presence) Run(ctx context.Context) {
	batch := make([]presenceWrite, 0, presenceBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case w := <-p.writes:
			batch = append(batch[:0], w)
		}
	gather:
		for len(batch) < presenceBatch {
			select {
			case w := <-p.writes:
				batch = append(batch, w)
			default:
				break gather
			}
		}
		p.runBatch(ctx, batch)
	}
}

// runBatch makes the writes of batch in one transaction; should it fail, it
// makes them one at a time, so that one failed write (a user removed since)
// does not lose the others. The writes go by user, and for each user the
// users row before their wait marks: two replicas' batches thus take their
// row locks in the same order and cannot deadlock on each other. The sort
// is stable, so a user's marks and clears keep the order they were queued in.
func (p *Presence) runBatch(ctx context.Context, batch []presenceWrite) {
	if len(batch) == 1 {
		p.run(ctx, batch[0])
		return
	}
	slices.SortStableFunc(batch, func(a, b presenceWrite) int { return strings.Compare(a.order, b.order) })
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := p.db.Tx(tctx, func(q db.Querier) error {
		for _, w := range batch {
			for _, st := range w.stmts {
				if _, err := q.Exec(tctx, st.query, st.args...); err != nil {
					return err
				}
			}
		}
		return nil
	})
	cancel()
	if err == nil || ctx.Err() != nil {
		return
	}
	p.log.Debug("presence writes failed together; making them one at a time", "writes", len(batch), "error", err)
	for _, w := range batch {
		p.run(ctx, w)
	}
}

func (p *Presence) run(ctx context.Context, w presenceWrite) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := p.db.Write(ctx, func(q db.Querier) error {
		for _, st := range w.stmts {
			if _, err := q.Exec(ctx, st.query, st.args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		p.log.Warn("presence not recorded", "what", w.what, "error", err)
	}
}

// write queues a write for Run; with the queue full (the database is not
// keeping up) it is dropped: presence is a hint, and marks expire.
func (p *Presence) write(what, order string, stmts ...stmt) {
	select {
	case p.writes <- presenceWrite{what, order, stmts}:
	default:
	}
}

func presenceKey(orgID, userID string) string { return orgID + "\x00" + userID }

// Seen records a call of the user, writing at most once per SeenEvery per
// user from this replica, and not at all when another replica wrote
// within SeenEvery. The write runs in the background: it never delays the
// call. A nil Presence records nothing.
func (p *Presence) Seen(c ctalk.Caller) {
	if p == nil {
		return
	}
	now := p.db.Now()
	key := presenceKey(c.OrgID, c.UserID)
	p.mu.Lock()
	if now.Sub(p.seen[key]) < SeenEvery {
		p.mu.Unlock()
		return
	}
	if len(p.seen) > 100000 {
		for k, t := range p.seen {
			if now.Sub(t) >= SeenEvery {
				delete(p.seen, k)
			}
		}
	}
	p.seen[key] = now
	p.mu.Unlock()
	p.write("record last seen", key+"\x00users", stmt{seenSQL, []any{c.OrgID, c.UserID, now, now.Add(-SeenEvery)}})
}

// Waiting marks the user as waiting until done is called. A nil Presence
// records nothing.
func (p *Presence) Waiting(c ctalk.Caller) (done func()) {
	if p == nil {
		return func() {}
	}
	p.startWait(c.OrgID, c.UserID)
	var once sync.Once
	return func() { once.Do(func() { p.endWait(c.OrgID, c.UserID) }) }
}

func (p *Presence) startWait(orgID, userID string) {
	key := presenceKey(orgID, userID)
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.waits[key]
	if w == nil {
		w = &waitMark{orgID: orgID, userID: userID}
		p.waits[key] = w
	}
	w.count++
	if w.count > 1 {
		return
	}
	if w.timer != nil {
		// A wait ended within waitGrace: the mark is still there; keep
		// refreshing it.
		w.timer.Reset(WaitTTL / 3)
		return
	}
	p.mark(w)
}

// mark writes w's mark ahead of now and arms its refresh; p.mu is held.
func (p *Presence) mark(w *waitMark) {
	now := p.db.Now()
	p.write("mark waiting", presenceKey(w.orgID, w.userID)+"\x00waits",
		stmt{dropExpiredWaitsSQL, []any{w.orgID, w.userID, p.replica, now}},
		stmt{markWaitSQL, []any{w.orgID, w.userID, p.replica, now.Add(WaitTTL)}})
	w.timer = time.AfterFunc(WaitTTL/3, func() { p.refresh(w) })
}

// refresh runs when w's timer fires: while waits last, it writes the mark
// again; after the last one ended (and waitGrace passed), it deletes it.
func (p *Presence) refresh(w *waitMark) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := presenceKey(w.orgID, w.userID)
	if p.waits[key] != w {
		// A timer reset while it fired: w was cleared already.
		return
	}
	if w.count > 0 {
		p.mark(w)
		return
	}
	delete(p.waits, key)
	p.write("clear waiting", key+"\x00waits", stmt{clearWaitSQL, []any{w.orgID, w.userID, p.replica}})
}

func (p *Presence) endWait(orgID, userID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.waits[presenceKey(orgID, userID)]
	if w == nil {
		return
	}
	if w.count--; w.count == 0 {
		w.timer.Reset(waitGrace)
	}
}

// Presence statements. seenSQL writes last_seen_at ($3) only when it is
// older than $4, so replicas that saw the same user share one write.
const (
	seenSQL = `UPDATE users SET last_seen_at = $3 WHERE org_id = $1 AND id = $2 AND (last_seen_at IS NULL OR last_seen_at < $4)`
	// dropExpiredWaitsSQL drops a user's marks that expired before $4, left
	// by replicas that stopped; markWaitSQL then writes this replica's ($3)
	// mark, until $4.
	dropExpiredWaitsSQL = `DELETE FROM presence_waits WHERE org_id = $1 AND user_id = $2 AND replica <> $3 AND wait_until < $4`
	markWaitSQL         = `INSERT INTO presence_waits (org_id, user_id, replica, wait_until) VALUES ($1, $2, $3, $4)
	ON CONFLICT (org_id, user_id, replica) DO UPDATE SET wait_until = excluded.wait_until`
	clearWaitSQL = `DELETE FROM presence_waits WHERE org_id = $1 AND user_id = $2 AND replica = $3`
)
