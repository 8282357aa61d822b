package usecase_test

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/baseline"
	"github.com/ctalk/ctalk/knowledge"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/usecase"
	"github.com/ctalk/ctalk/wait"
)

// counter counts the bytes written to it.
type counter struct{ n int64 }

func (c *counter) Write(b []byte) (int, error) { c.n += int64(len(b)); return len(b), nil }

// TestExportAtScale measures the export of an organization of
// CTALK_EXPORT_SCALE answered questions, each with a draft, on each
// engine: its time, its size and the most heap the process held while it
// ran (sampled every millisecond), which stays flat as the org grows
// because rows are written as they are read. Skipped unless the variable
// is set (BENCHMARKS.md has the figures).
func TestExportAtScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CTALK_EXPORT_SCALE"))
	if n <= 0 {
		t.Skip("set CTALK_EXPORT_SCALE to a number of questions to measure the export")
	}
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		now := time.Now().UTC()
		if _, err := dbtest.Exec(d, `INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ('acme', 'acme', 'x', $1)`, now); err != nil {
			t.Fatal(err)
		}
		const users = 50
		for i := range users {
			if _, err := dbtest.Exec(d, `INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ('acme', $1, $1, 'x', 'member', $2, $2)`, fmt.Sprintf("u%d", i), now); err != nil {
				t.Fatal(err)
			}
		}
		a, err := auth.NewService(d, auth.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		in := inbox.NewService(d, inbox.DefaultConfig(), wait.NewBroker())
		if err := inbox.Baseline(d, baseline.Limits{}).SeedHistory(ctx, "acme", users, 1, n, now); err != nil {
			t.Fatal(err)
		}
		if _, err := dbtest.Exec(d, `INSERT INTO drafts (org_id, question_id, version, body, created_at, approved_at)
			SELECT org_id, id, 1, resolution, resolved_at, resolved_at FROM questions WHERE org_id = 'acme'`); err != nil {
			t.Fatal(err)
		}
		o := orgs.NewService(d, a)
		ex := usecase.NewExport(o, in, knowledge.NewService(d, o), channels.NewService(d, channels.DefaultConfig(), wait.NewBroker()))

		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		var peak atomic.Uint64
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			var m runtime.MemStats
			for {
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}()
		var out counter
		began := time.Now()
		m, err := ex.Organization(ctx, ctalk.Caller{OrgID: "acme", UserID: "u0", Admin: true}, io.Writer(&out))
		took := time.Since(began)
		close(stop)
		<-sampled
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		for _, f := range m.Files {
			rows += f.Rows
		}
		t.Logf("%s: %d questions, %d rows in %v (%.0f rows/s), archive %.1f MB, heap in use %.1f MB before, at most %.1f MB during",
			d.Engine, n, rows, took.Round(time.Millisecond), float64(rows)/took.Seconds(), float64(out.n)/1e6,
			float64(base.HeapInuse)/1e6, float64(peak.Load())/1e6)
	})
}
