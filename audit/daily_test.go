package audit_test

import (
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestDailyRollupCountsEveryEventOnceUnderConcurrentWriters has two logs,
// as two replicas would, write calls of the same days, tools and outcomes
// at once: each rollup row must count every call once, with its latency in
// the right bucket, for the org that made it only.
func TestDailyRollupCountsEveryEventOnceUnderConcurrentWriters(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		day := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
		logs := []*audit.Log{audit.NewLog(d, slog.Default()), audit.NewLog(d, slog.Default())}
		var wg sync.WaitGroup
		for w, l := range logs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 1200 {
					at := day.Add(time.Duration(i%2) * 24 * time.Hour)
					l.Record(audit.Event{At: at, OrgID: "acme", UserID: fmt.Sprint("u", w), Tool: "ask_person", Outcome: []string{"ok", "invalid", "ok"}[i%3], DurationMS: float64(i % 40)})
				}
				l.Record(audit.Event{At: day.Add(24 * time.Hour), OrgID: "other", Tool: "ask_person", Outcome: "ok", DurationMS: 3})
			}()
		}
		wg.Wait()
		for _, l := range logs {
			l.Close()
		}
		rows, err := logs[0].Daily(ctx, "acme", day.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		var under5 int64
		for _, r := range rows {
			got[r.Day.Format("01-02")+" "+r.Outcome] += r.Calls()
			under5 += r.Latency.Counts[0]
		}
		// Per writer and day 600 calls: 400 ok and 200 invalid.
		want := map[string]int64{"11-20 ok": 800, "11-20 invalid": 400, "11-21 ok": 800, "11-21 invalid": 400}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("calls per day and outcome %v, want %v", got, want)
		}
		// Durations 0..39 ms, 6 of every 40 at most 5 ms.
		if under5 != 2400*6/40 {
			t.Errorf("%d calls in the first latency bucket, want %d", under5, 2400*6/40)
		}
		// With a retention of 30 days, 30 days after the 21st's events every
		// acme event goes; the rollup rows keep their counts for the
		// overview's 90 days, and go after.
		if err := logs[0].SetRetention(ctx, "acme", 30); err != nil {
			t.Fatal(err)
		}
		if n, err := logs[0].Prune(ctx, day.Add(24*time.Hour+30*24*time.Hour+time.Hour)); err != nil || n != 2400 {
			t.Fatalf("pruned %d (err %v), want acme's 2,400 events", n, err)
		}
		rows, err = logs[0].Daily(ctx, "acme", day.Add(-time.Hour))
		calls := int64(0)
		for _, r := range rows {
			calls += r.Calls()
		}
		if err != nil || len(rows) != 4 || calls != 2400 {
			t.Errorf("after pruning the events: %d rollup rows counting %d calls (err %v), want all four still counting 2,400", len(rows), calls, err)
		}
		if _, err := logs[0].Prune(ctx, day.Add(91*24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		rows, err = logs[0].Daily(ctx, "acme", day.Add(-time.Hour))
		if err != nil || len(rows) != 2 || rows[0].Day.Day() != 21 {
			t.Errorf("91 days on: %d rollup rows (err %v), want the 21st's two", len(rows), err)
		}
		if other, err := logs[0].Daily(ctx, "other", day.Add(-time.Hour)); err != nil || len(other) != 1 || other[0].Calls() != 2 {
			t.Errorf("other's rollup after acme's pruning: %v, %v; want its two calls kept", other, err)
		}
	})
}
