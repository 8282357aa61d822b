package audit_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestChainHoldsUnderConcurrentWritersAndReplicas has two replicas (two
// pools over one database, as two processes would open it), each with two
// logs, record events of two orgs at once while a pruner runs: every
// org's chain numbers each event once, from 1 with no gap, and verifies.
func TestChainHoldsUnderConcurrentWritersAndReplicas(t *testing.T) {
	for _, e := range dbtest.Engines {
		t.Run(string(e), func(t *testing.T) {
			cfg := dbtest.Config(t, e)
			var logs []*audit.Log
			for range 2 {
				d, err := db.Open(dbtest.Operator(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { d.Close() })
				logs = append(logs, audit.NewLog(d, slog.Default()), audit.NewLog(d, slog.Default()))
			}
			ctx, cancel := context.WithCancel(dbtest.Operator())
			var pruner sync.WaitGroup
			pruner.Go(func() {
				for ctx.Err() == nil {
					if _, err := logs[3].Prune(ctx, time.Now()); err != nil && ctx.Err() == nil {
						t.Errorf("prune while writing: %v", err)
						return
					}
				}
			})
			const each = 1500
			var wg sync.WaitGroup
			for w, l := range logs {
				wg.Go(func() {
					for i := range each {
						org := []string{"acme", "globex"}[i%2]
						l.Record(audit.Event{At: time.Now().UTC(), OrgID: org, UserID: fmt.Sprint("w", w), Tool: "whoami", Outcome: "ok", RequestID: fmt.Sprint(w, "-", i)})
					}
				})
			}
			wg.Wait()
			for _, l := range logs {
				l.Close()
			}
			cancel()
			pruner.Wait()
			for _, org := range []string{"acme", "globex"} {
				v, err := logs[1].Verify(dbtest.Operator(), org)
				if err != nil {
					t.Fatal(err)
				}
				if want := int64(len(logs) * each / 2); v.Break != nil || v.Head != want || v.Checked != want {
					t.Errorf("%s: %+v, break %+v; want %d events chained from 1, holding", org, v, v.Break, want)
				}
			}
		})
	}
}

// TestVerifyNamesTheFirstBreak edits, removes and adds rows in SQL, as
// someone with the database could, and changes the checkpoint pruning
// left: each time Verify names the first event where the chain breaks.
func TestVerifyNamesTheFirstBreak(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := dbtest.Exec(d, q, args...); err != nil {
				t.Fatal(err)
			}
		}
		write := func(l *audit.Log, n int, at time.Time) {
			for i := range n {
				l.Record(audit.Event{At: at, OrgID: "acme", UserID: "bob", Tool: "whoami", Outcome: "ok", DurationMS: float64(i) / 4, IDs: []string{"bob"}})
			}
		}
		l := audit.NewLog(d, slog.Default())
		write(l, 30, time.Now().UTC().Add(-400*24*time.Hour))
		write(l, 30, time.Now().UTC())
		l.Close()
		check := func(what string, seq int64, reason string) {
			t.Helper()
			v, err := l.Verify(ctx, "acme")
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			switch {
			case seq == 0 && v.Break != nil:
				t.Errorf("%s: a break %+v in a chain that holds", what, v.Break)
			case seq != 0 && (v.Break == nil || v.Break.Seq != seq || !strings.Contains(v.Break.Reason, reason)):
				t.Errorf("%s: break %+v, want at event %d saying %q", what, v.Break, seq, reason)
			}
		}
		check("untouched", 0, "")

		var old string
		if err := d.QueryRow(ctx, `SELECT tool FROM audit_events WHERE org_id = 'acme' AND seq = 12`).Scan(&old); err != nil {
			t.Fatal(err)
		}
		exec(`UPDATE audit_events SET tool = 'remove_user' WHERE org_id = 'acme' AND seq = 12`)
		check("a field edited", 12, "does not match its hash")
		exec(`UPDATE audit_events SET tool = $1 WHERE org_id = 'acme' AND seq = 12`, old)
		check("the edit undone", 0, "")

		exec(`UPDATE audit_events SET at = $1 WHERE org_id = 'acme' AND seq = 5`, time.Now().UTC().Add(-500*24*time.Hour))
		check("a time edited", 5, "does not match its hash")

		// Pruning at 365 days cuts the first 30, leaving a signed checkpoint;
		// the edited event 5 goes with them.
		if n, err := l.Prune(ctx, time.Now()); err != nil || n != 30 {
			t.Fatalf("pruned %d (%v), want 30", n, err)
		}
		check("pruned", 0, "")

		exec(`DELETE FROM audit_events WHERE org_id = 'acme' AND seq = 40`)
		check("an event deleted", 40, "missing")
		exec(`UPDATE audit_events SET seq = 40 WHERE org_id = 'acme' AND seq = 41`)
		check("a later event renumbered into the gap", 40, "does not match its hash")

		exec(`DELETE FROM audit_events WHERE org_id = 'acme' AND seq >= 40`)
		check("the newest events deleted", 40, "newest")

		exec(`UPDATE audit_orgs SET pruned_seq = 20 WHERE org_id = 'acme'`)
		check("the checkpoint moved", 20, "not signed by this server")
	})
}
