package audit_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

func TestCloseFlushesAndPruneDeletesOldEvents(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		l := audit.NewLog(d, slog.Default())
		now := time.Now().UTC()
		for i := range 600 {
			at := now.Add(-time.Duration(i%3) * 48 * time.Hour) // now, 2 days ago, 4 days ago
			l.Record(audit.Event{At: at, OrgID: "acme", UserID: "u", Tool: fmt.Sprint("t", i%3), Outcome: "ok", IDs: []string{"q_1"}})
		}
		l.Close()
		ctx := context.Background()
		events, more, err := l.Events(ctx, "acme", audit.Filter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != 600 || more {
			t.Fatalf("after Close: %d events (more %v), want all 600 written", len(events), more)
		}
		if other, _, err := l.Events(ctx, "other", audit.Filter{Limit: 10}); err != nil || len(other) != 0 {
			t.Fatalf("org other sees %d of acme's events (err %v)", len(other), err)
		}
		n, err := l.Prune(ctx, now.Add(-72*time.Hour))
		if err != nil || n != 200 {
			t.Fatalf("pruned %d (err %v), want the 200 events four days old", n, err)
		}
		recent, _, err := l.Events(ctx, "acme", audit.Filter{Limit: 1000, Since: now.Add(-time.Hour)})
		if err != nil || len(recent) != 200 {
			t.Fatalf("events of the last hour: %d (err %v), want 200", len(recent), err)
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
		events, _, err := l.Events(context.Background(), "acme", audit.Filter{Limit: n + 1})
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
