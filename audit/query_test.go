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

// TestQuery: filters by person, tool, outcome and time combine; pages run
// newest first and end; another org's events never show; bad queries are
// refused saying which field is wrong.
func TestQuery(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		l := audit.NewLog(d, slog.Default())
		base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
		for i := range 30 {
			outcome := "ok"
			if i%3 == 0 {
				outcome = "conflict"
			}
			l.Record(audit.Event{At: base.Add(time.Duration(i) * time.Minute), OrgID: "acme", UserID: []string{"ann", "ben"}[i%2],
				Tool: []string{"web:remove_user", "ask_person"}[i%2], Outcome: outcome, IDs: []string{fmt.Sprint("u", i)}})
		}
		l.Record(audit.Event{At: base, OrgID: "other", UserID: "ann", Tool: "web:remove_user", Outcome: "ok"})
		l.Close()
		ctx := dbtest.Operator()
		count := func(q audit.Query) int {
			t.Helper()
			n := 0
			for {
				p, err := l.Query(ctx, "acme", q)
				if err != nil {
					t.Fatal(err)
				}
				for i, e := range p.Events {
					if e.OrgID != "acme" || (i > 0 && e.ID >= p.Events[i-1].ID) {
						t.Fatalf("event %+v out of order or of another org", e)
					}
				}
				n += len(p.Events)
				if p.NextCursor == "" {
					return n
				}
				q.Cursor = p.NextCursor
			}
		}
		for _, c := range []struct {
			name string
			q    audit.Query
			want int
		}{
			{"all, in pages of 7", audit.Query{Limit: 7}, 30},
			{"one person", audit.Query{UserID: " ann "}, 15},
			{"one tool", audit.Query{Tool: "web:remove_user", Limit: 4}, 15},
			{"one outcome", audit.Query{Outcome: "conflict"}, 10},
			{"person and outcome", audit.Query{UserID: "ann", Outcome: "conflict"}, 5},
			{"time range", audit.Query{Since: base.Add(10 * time.Minute).Format(time.RFC3339), Until: base.Add(20 * time.Minute).Format(time.RFC3339), Limit: 3}, 10},
			{"nobody", audit.Query{UserID: "zed"}, 0},
		} {
			if got := count(c.q); got != c.want {
				t.Errorf("%s: %d events, want %d", c.name, got, c.want)
			}
		}
		first, _ := l.Query(ctx, "acme", audit.Query{Limit: 1})
		if len(first.Events) != 1 || !first.Events[0].At.Equal(base.Add(29*time.Minute)) {
			t.Errorf("the first page does not start with the newest event: %+v", first.Events)
		}
		for _, bad := range []struct {
			q    audit.Query
			want string
		}{
			{audit.Query{UserID: "Not An Id!"}, "user_id"},
			{audit.Query{Outcome: "fine"}, "outcome"},
			{audit.Query{Since: "yesterday"}, "since is not an RFC 3339 time"},
			{audit.Query{Until: "2026-13-01"}, "until is not an RFC 3339 time"},
			{audit.Query{Limit: 201}, "limit"},
			{audit.Query{Cursor: "abc"}, "cursor"},
			{audit.Query{Cursor: "-4"}, "cursor"},
		} {
			_, err := l.Query(ctx, "acme", bad.q)
			if ctalk.ErrorCode(err) != ctalk.EInvalid || !contains(ctalk.ErrorMessage(err), bad.want) {
				t.Errorf("query %+v: %v, want invalid naming %s", bad.q, err, bad.want)
			}
		}
	})
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
