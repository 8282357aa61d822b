package main

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/baseline"
)

// Scale compares inbox reads over a small and a big org history.
type Scale struct {
	SmallRows     int       `json:"small_rows"`
	BigRows       int       `json:"big_rows"`
	Pending       int       `json:"pending_in_measured_inbox"`
	RecentReplies int       `json:"recent_replies_of_measured_user"`
	SeedSeconds   float64   `json:"seed_seconds"`
	Ops           []ScaleOp `json:"ops"`
	Skipped       bool      `json:"skipped,omitempty"`
	Note          string    `json:"note,omitempty"`
}

// ScaleOp is one operation measured at both sizes.
type ScaleOp struct {
	Op    string  `json:"op"`
	Kind  string  `json:"kind"`
	Small OpStats `json:"small"`
	Big   OpStats `json:"big"`
	// Ratio is the p50 latency at the big size over the p50 at the small.
	Ratio float64 `json:"p50_ratio"`
}

// The measured user's constant part of the scale org.
const (
	scalePending = 3
	scaleReplies = 5
	seedChunk    = 100000
)

// phaseScale seeds an org's history with bulk SQL, answered questions spread
// over every pair of its users, and times check_inbox and check_replies of
// one user whose pending inbox (3 questions) and recent replies (5) stay the
// same, first over the small history, then over the big one. The statements
// behind them are timed too, to show which part grows, and so is ask_person
// between two other users, whose loop-breaker count reads the pair's history.
func (r *runner) phaseScale(ctx context.Context) error {
	sc := &Scale{SmallRows: r.cfg.ScaleSmall, BigRows: r.cfg.ScaleRows, Pending: scalePending, RecentReplies: scaleReplies}
	r.res.Scale = sc
	if r.db == nil {
		sc.Skipped, sc.Note = true, "seeding needs the target's database (-database-url)"
		return nil
	}
	o, err := r.newOrg(ctx, r.url, "scale", r.cfg.Users, false)
	if err != nil {
		return err
	}
	me, err := r.cl.connect(ctx, r.url, o.tokens[0])
	if err != nil {
		return err
	}
	defer me.Close()
	// The asker of the ask_person samples is another user, so that the
	// measured user's inbox and replies stay as seeded.
	asker, err := r.cl.connect(ctx, r.url, o.tokens[len(o.tokens)-1])
	if err != nil {
		return err
	}
	defer asker.Close()
	now := r.db.Now()
	cutoff := now.Add(-10 * time.Minute)
	if err := seedMeasuredUser(ctx, r.db, o, now, cutoff); err != nil {
		return fmt.Errorf("seed the measured user: %w", err)
	}
	// History ends an hour before the cutoff and runs back one second per row.
	historyEnd := cutoff.Add(-time.Hour)

	started := time.Now()
	if err := r.seedHistory(ctx, o, 1, sc.SmallRows, historyEnd); err != nil {
		return err
	}
	if err := statements(r.db).RebuildPairStats(ctx, o.id); err != nil {
		return err
	}
	seeding := time.Since(started)
	small, err := r.scaleOps(ctx, o, me, asker, cutoff)
	if err != nil {
		return err
	}
	started = time.Now()
	if err := r.seedHistory(ctx, o, sc.SmallRows+1, sc.BigRows, historyEnd); err != nil {
		return err
	}
	if err := statements(r.db).RebuildPairStats(ctx, o.id); err != nil {
		return err
	}
	if r.engine == db.Postgres {
		// Autovacuum would analyze a table that grew this much; do it now
		// rather than measure plans made for the small table.
		if err := statements(r.db).Analyze(ctx); err != nil {
			return err
		}
		sc.Note = "Postgres: ANALYZE ran after seeding, as autovacuum would. "
	} else {
		sc.Note = "SQLite: no ANALYZE after seeding (ctalk runs PRAGMA optimize at start, before these rows existed), so plans rest on the indexes alone. "
	}
	sc.SeedSeconds = (seeding + time.Since(started)).Seconds()
	big, err := r.scaleOps(ctx, o, me, asker, cutoff)
	if err != nil {
		return err
	}
	sc.Note += "Seeded rows are short answered questions between every ordered pair of users, handed over; latencies are of sequential calls."
	for i := range small {
		op := ScaleOp{Op: small[i].Op, Kind: small[i].Kind, Small: small[i], Big: big[i]}
		if small[i].P50MS > 0 {
			op.Ratio = big[i].P50MS / small[i].P50MS
		}
		sc.Ops = append(sc.Ops, op)
		r.logf("  %-26s p50 %8.3f ms at %d, %8.3f ms at %d: x%.2f", op.Op, op.Small.P50MS, sc.SmallRows, op.Big.P50MS, sc.BigRows, op.Ratio)
	}
	return nil
}

// seedMeasuredUser gives u0 three pending questions from u1, u2 and u3, and
// five questions of its own answered after cutoff.
func seedMeasuredUser(ctx context.Context, d *db.DB, o *org, now, cutoff time.Time) error {
	var qs []baseline.Seeded
	n := len(o.users)
	for i := range scalePending {
		at := now.Add(-time.Minute + time.Duration(i)*time.Second)
		qs = append(qs, baseline.Seeded{ID: fmt.Sprintf("qp_%d", i), From: o.users[1+i], To: o.users[0], Text: questionText, CreatedAt: at})
	}
	for i := range scaleReplies {
		asked := cutoff.Add(time.Minute + time.Duration(i)*time.Second)
		qs = append(qs, baseline.Seeded{ID: fmt.Sprintf("qr_%d", i), From: o.users[0], To: o.users[1+i%(n-1)], Text: questionText,
			CreatedAt: asked, Answer: answerText, AnsweredAt: asked.Add(time.Minute)})
	}
	return statements(d).SeedQuestions(ctx, o.id, qs)
}

// seedHistory inserts history rows from..to in chunks (see
// baseline.Statements.SeedHistory).
func (r *runner) seedHistory(ctx context.Context, o *org, from, to int, end time.Time) error {
	for lo := from; lo <= to; lo += seedChunk {
		hi := min(lo+seedChunk-1, to)
		if err := statements(r.db).SeedHistory(ctx, o.id, len(o.users), lo, hi, end); err != nil {
			return err
		}
		if to-from > seedChunk {
			r.logf("  seeded %d of %d history rows", hi, to)
		}
	}
	return nil
}

// scaleOps times the tools and their statements once, in a fixed order.
func (r *runner) scaleOps(ctx context.Context, o *org, me, asker *mcp.ClientSession, cutoff time.Time) ([]OpStats, error) {
	// Check once that the measured user's view is what it should be.
	m, err := callTool(ctx, me, "check_inbox", nil)
	if err != nil {
		return nil, err
	}
	if got := len(anySlice(m["questions"])); got != scalePending {
		return nil, fmt.Errorf("check_inbox of the measured user returned %d questions, want %d", got, scalePending)
	}
	since := cutoff.Format(time.RFC3339Nano)
	if m, err = callTool(ctx, me, "check_replies", map[string]any{"since": since}); err != nil {
		return nil, err
	}
	if got := len(anySlice(m["replies"])); got != scaleReplies {
		return nil, fmt.Errorf("check_replies of the measured user returned %d replies, want %d", got, scaleReplies)
	}
	n, d := r.cfg.ScaleSamples, r.cfg.Duration
	// The senders of the measured user's page (see seedMeasuredUser).
	me0, senders := o.users[0], o.users[1:1+scalePending]
	askerID, askee := o.users[len(o.users)-1], o.users[len(o.users)-2]
	ops := []struct {
		op, kind string
		fn       func(ctx context.Context) error
	}{
		{"check_inbox", "tool", func(ctx context.Context) error { _, err := callTool(ctx, me, "check_inbox", nil); return err }},
		{"check_replies", "tool", func(ctx context.Context) error {
			_, err := callTool(ctx, me, "check_replies", map[string]any{"since": since})
			return err
		}},
		{"SQL inbox select", "sql", func(ctx context.Context) error { return selectInboxPage(ctx, r.db, o.id, me0) }},
		{"SQL sender history count", "sql", func(ctx context.Context) error { return selectPairStats(ctx, r.db, o.id, me0, senders) }},
		{"SQL recent exchanges", "sql", func(ctx context.Context) error { return selectRecentExchanges(ctx, r.db, o.id, me0, senders) }},
		{"SQL replies select", "sql", func(ctx context.Context) error { return selectRepliesPage(ctx, r.db, o.id, me0, cutoff) }},
		{"ask_person", "tool", func(ctx context.Context) error {
			_, err := callTool(ctx, asker, "ask_person", map[string]any{"to_user_id": askee, "question": questionText})
			return err
		}},
		{"SQL ask checks", "sql", func(ctx context.Context) error { return selectAskChecks(ctx, r.db, o.id, askerID, askee) }},
	}
	out := make([]OpStats, 0, len(ops))
	for _, op := range ops {
		out = append(out, sequential(ctx, "scale", op.kind, op.op, n, d, op.fn))
	}
	return out, nil
}

// scaleTarget judges check_inbox at the large history against the small.
func (r *runner) scaleTarget() {
	res := r.res
	inboxTarget := Target{Name: fmt.Sprintf("check_inbox p50 at %s rows <= 1.5x at %s", count(r.cfg.ScaleRows), count(r.cfg.ScaleSmall)), Want: "<= 1.50x", Status: statusSkipped}
	if sc := res.Scale; sc != nil && !sc.Skipped {
		for _, op := range sc.Ops {
			if op.Op == "check_inbox" {
				inboxTarget.Got, inboxTarget.Status = fmt.Sprintf("%.2fx", op.Ratio), pass(op.Ratio > 0 && op.Ratio <= 1.5)
			}
		}
	} else if sc != nil {
		inboxTarget.Note = sc.Note
	} else {
		inboxTarget.Note = "phase not run"
	}
	res.Targets = append(res.Targets, inboxTarget)

}
