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
// calls do, and waits until they are written.
//
// Compare runs with benchstat:
//
//	go test ./audit -run '^$' -bench Write -count 6 > old.txt
func BenchmarkWrite(b *testing.B) {
	for _, e := range dbtest.Engines {
		b.Run(string(e), func(b *testing.B) {
			d := dbtest.Open(b, e)
			e := audit.Event{At: time.Now().UTC(), OrgID: "acme", UserID: "bob", Tool: "whoami", Outcome: "ok", DurationMS: 0.25, IDs: []string{"bob"}}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				l := audit.NewLog(d, slog.Default())
				for j := range 1000 {
					e.RequestID = fmt.Sprint(i, "-", j)
					l.Record(e)
				}
				l.Close()
			}
		})
	}
}
