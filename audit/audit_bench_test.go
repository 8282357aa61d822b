package audit_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db/dbtest"
)

// BenchmarkWrite measures the audit writer on each engine (Postgres with
// TEST_DATABASE_URL): one op records 1,000 events, as a busy replica's tool
// calls do, and waits until they are written; "chained" extends the org's
// hash chain as the server does, "unchained" writes the same events
// without it, so that one run shows what the chain costs.
//
// Compare runs with benchstat:
//
//	go test ./audit -run '^$' -bench Write -count 6 > old.txt
func BenchmarkWrite(b *testing.B) {
	for _, e := range dbtest.Engines {
		for _, chained := range []bool{false, true} {
			name := string(e) + "/unchained"
			if chained {
				name = string(e) + "/chained"
			}
			b.Run(name, func(b *testing.B) {
				d := dbtest.Open(b, e)
				ev := audit.Event{At: time.Now().UTC(), OrgID: "acme", UserID: "bob", Tool: "whoami", Outcome: "ok", DurationMS: 0.25, IDs: []string{"bob"}}
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					l := audit.NewLog(d, slog.Default())
					if !chained {
						audit.Unchained(l)
					}
					for j := range 1000 {
						ev.RequestID = fmt.Sprint(i, "-", j)
						l.Record(ev)
					}
					l.Close()
				}
			})
		}
	}
}
