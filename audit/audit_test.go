package audit_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestCloseFlushesAndPruneDeletesOldEvents: Close writes every queued
// event; Prune deletes, in batches, the events older than each org's
// retention (the server's default, else the org's own), cutting the chain
// from its front and leaving a signed checkpoint there, so that what is
// left still verifies; another org's events stay.
func TestCloseFlushesAndPruneDeletesOldEvents(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		l := audit.NewLog(d, slog.Default())
		now := time.Now().UTC()
		// 1,200 events 400 days old, then 1,200 100 days old, then 600 of
		// now: more than a pruning batch of each.
		for i := range 3000 {
			at := now.Add(-400 * 24 * time.Hour)
			if i >= 1200 {
				at = now.Add(-100 * 24 * time.Hour)
			}
			if i >= 2400 {
				at = now
			}
			l.Record(audit.Event{At: at, OrgID: "acme", UserID: "u", Tool: fmt.Sprint("t", i%3), Outcome: "ok", IDs: []string{"q_1"}})
		}
		l.Record(audit.Event{At: now.Add(-400 * 24 * time.Hour), OrgID: "other", Tool: "t", Outcome: "ok"})
		l.Close()
		ctx := dbtest.Operator()
		events, more, err := l.Events(ctx, "acme", audit.Filter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != 1000 || !more {
			t.Fatalf("after Close: %d events (more %v), want a full page of the 3,000 written", len(events), more)
		}
		if other, _, err := l.Events(ctx, "nobody", audit.Filter{Limit: 10}); err != nil || len(other) != 0 {
			t.Fatalf("org nobody sees %d of acme's events (err %v)", len(other), err)
		}
		if err := l.SetRetention(ctx, "other", 29); ctalk.ErrorCode(err) != ctalk.EInvalid || !strings.Contains(ctalk.ErrorMessage(err), "from 30 to 36500") {
			t.Fatalf("retention of 29 days: %v, want EInvalid naming the bounds", err)
		}
		if err := l.SetRetention(ctx, "other", 500); err != nil {
			t.Fatal(err)
		}
		if n, err := l.Prune(ctx, now); err != nil || n != 1200 {
			t.Fatalf("pruned %d (err %v), want acme's 1,200 events older than the default 365 days", n, err)
		}
		if err := l.SetRetention(ctx, "acme", 30); err != nil {
			t.Fatal(err)
		}
		if r, err := l.Retention(ctx, "acme"); err != nil || r.Days != 30 || r.Default {
			t.Fatalf("acme's retention: %+v, %v", r, err)
		}
		if n, err := l.Prune(ctx, now); err != nil || n != 1200 {
			t.Fatalf("pruned %d (err %v), want the 1,200 events older than acme's 30 days", n, err)
		}
		recent, _, err := l.Events(ctx, "acme", audit.Filter{Limit: 1000})
		if err != nil || len(recent) != 600 {
			t.Fatalf("acme's events left: %d (err %v), want the 600 of now", len(recent), err)
		}
		if kept, _, err := l.Events(ctx, "other", audit.Filter{Limit: 10}); err != nil || len(kept) != 1 {
			t.Fatalf("other's events: %d (err %v), want its one, within its 500 days", len(kept), err)
		}
		v, err := l.Verify(ctx, "acme")
		if err != nil || v.Break != nil || v.From != 2400 || v.Head != 3000 || v.Checked != 600 {
			t.Fatalf("verify after pruning: %+v %+v, %v; want events 2401 to 3000 checked from the checkpoint", v, v.Break, err)
		}
		// Recording after Close still writes, directly.
		l.Record(audit.Event{At: now, OrgID: "acme", Tool: "late", Outcome: "ok"})
		if late, _, err := l.Events(ctx, "acme", audit.Filter{Tool: "late", Limit: 1}); err != nil || len(late) != 1 {
			t.Fatalf("an event recorded after Close was lost (err %v)", err)
		}
	})
}

func TestRecordNeverBlocksWhileTheDatabaseIsDown(t *testing.T) {
	d := dbtest.Open(t, db.SQLite)
	l := audit.NewLog(d, slog.Default())
	d.Close() // every write now fails, as during an outage
	done := make(chan struct{})
	go func() {
		for range 20000 {
			l.Record(audit.Event{At: time.Now(), OrgID: "acme", Tool: "t", Outcome: "ok"})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Record blocked while the database was down")
	}
	if l.Dropped() == 0 {
		t.Fatal("20000 events fit a queue that should have filled")
	}
	closed := make(chan struct{})
	go func() { l.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not give up on an unreachable database")
	}
}

// TestBatchesKeepEveryFieldInOrder checks that events written in batches of
// every size come back whole, newest first, each with its own fields.
func TestBatchesKeepEveryFieldInOrder(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		l := audit.NewLog(d, slog.Default())
		at := time.Date(2026, 11, 30, 12, 0, 0, 123456000, time.UTC)
		const n = 700
		for i := range n {
			e := audit.Event{At: at.Add(time.Duration(i) * time.Millisecond), OrgID: "acme", UserID: fmt.Sprint("u", i%7), Tool: fmt.Sprint("t", i%5),
				Outcome: "ok", DurationMS: float64(i) / 4, RequestID: fmt.Sprint("r", i)}
			if i%3 == 0 {
				e.IDs = []string{fmt.Sprint("q_", i), "bob"}
			}
			l.Record(e)
		}
		l.Close()
		events, _, err := l.Events(dbtest.Operator(), "acme", audit.Filter{Limit: n + 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != n {
			t.Fatalf("%d events, want %d", len(events), n)
		}
		for k, e := range events {
			i := n - 1 - k
			wantIDs := "[]"
			if i%3 == 0 {
				wantIDs = fmt.Sprintf("[q_%d bob]", i)
			}
			if !e.At.Equal(at.Add(time.Duration(i)*time.Millisecond)) || e.UserID != fmt.Sprint("u", i%7) || e.Tool != fmt.Sprint("t", i%5) ||
				e.Outcome != "ok" || e.DurationMS != float64(i)/4 || e.RequestID != fmt.Sprint("r", i) || fmt.Sprint(e.IDs) != wantIDs {
				t.Fatalf("event %d of the newest first came back as %+v", k, e)
			}
		}
	})
}
