package web_test

import (
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/histogram"
	"github.com/ctalk/ctalk/orgs"
)

// Sizes of the overview benchmark's org: a year of a busy org's record.
const (
	benchAuditRows    = 1_000_000
	benchQuestions    = 100_000
	benchMessages     = 20_000
	benchMembers      = 20
	benchAuditSpacing = 7 // seconds between seeded events: 1,000,000 over 81 days
)

// BenchmarkOverview measures the admins' overview on each engine (Postgres
// with TEST_DATABASE_URL) over 1,000,000 audit events, 100,000 questions
// (each with an approved draft, a tenth still pending) and 20,000 channel
// messages, once the ended days are kept (the first op counts them): the
// page (served over HTTP, as a browser asks for it) for each
// range, the page of 90 days with its seven charts as a browser asks for
// them, its sections alone, and, for the ratios, the questions and the
// channel messages of 90 days with no day kept, and the tool calls of 90
// days counted from the events themselves rather than the daily rollup. It
// reports the median (p50-ms) of its ops beside ns/op.
//
//	TEST_DATABASE_URL=... go test ./web -run '^$' -bench Overview -benchtime 30x
func BenchmarkOverview(b *testing.B) {
	for _, engine := range dbtest.Engines {
		b.Run(string(engine), func(b *testing.B) {
			s := start(b, engine)
			seedOverview(b, s)
			admin := s.newClient(b, "acme", "alice")
			for _, days := range overviewRangesDays {
				b.Run(fmt.Sprintf("page-%dd", days), func(b *testing.B) {
					benchMedian(b, func() { mustGet(b, admin, fmt.Sprintf("/admin/overview?days=%d", days)) })
				})
			}
			b.Run("page-and-charts-90d", func(b *testing.B) {
				benchMedian(b, func() {
					mustGet(b, admin, "/admin/overview?days=90")
					for _, c := range []string{"questions", "open", "calls", "tools", "latency", "channels", "notify"} {
						mustGet(b, admin, "/admin/overview/"+c+".svg?days=90")
					}
				})
			})
			since := time.Now().AddDate(0, 0, -89)
			b.Run("questions-90d", func(b *testing.B) {
				benchMedian(b, func() {
					if _, err := s.Inbox.Overview(dbtest.Operator(), "acme", since); err != nil {
						b.Fatal(err)
					}
				})
			})
			b.Run("questions-90d-uncounted", func(b *testing.B) {
				benchMedian(b, func() {
					if _, err := dbtest.Exec(s.DB, `DELETE FROM question_days`); err != nil {
						b.Fatal(err)
					}
					if _, err := s.Inbox.Overview(dbtest.Operator(), "acme", since); err != nil {
						b.Fatal(err)
					}
				})
			})
			b.Run("channels-90d", func(b *testing.B) {
				benchMedian(b, func() {
					if _, err := s.Channels.Activity(dbtest.Operator(), "acme", since); err != nil {
						b.Fatal(err)
					}
				})
			})
			b.Run("channels-90d-uncounted", func(b *testing.B) {
				benchMedian(b, func() {
					if _, err := dbtest.Exec(s.DB, `DELETE FROM channel_days`); err != nil {
						b.Fatal(err)
					}
					if _, err := s.Channels.Activity(dbtest.Operator(), "acme", since); err != nil {
						b.Fatal(err)
					}
				})
			})
			b.Run("calls-90d-rollup", func(b *testing.B) {
				benchMedian(b, func() {
					if _, err := s.Audit.Daily(dbtest.Operator(), "acme", time.Now().AddDate(0, 0, -89)); err != nil {
						b.Fatal(err)
					}
				})
			})
			b.Run("calls-90d-from-events", func(b *testing.B) {
				q := `SELECT ` + s.DB.DaySQL("at") + `, tool, outcome, COUNT(*), ` + histogram.SumsSQL("duration_ms", audit.LatencyBoundsMS) + `
					FROM audit_events WHERE org_id = $1 AND at >= $2 GROUP BY 1, 2, 3`
				benchMedian(b, func() {
					if err := s.DB.Each(dbtest.Operator(), q, []any{"acme", time.Now().AddDate(0, 0, -89)}, func(*db.Rows) error { return nil }); err != nil {
						b.Fatal(err)
					}
				})
			})
		})
	}
}

var overviewRangesDays = []int{7, 30, 90}

func mustGet(b *testing.B, c *client, path string) {
	if code, body := c.get(path); code != http.StatusOK {
		b.Fatalf("%s: %d %.200s", path, code, body)
	}
}

// benchMedian runs op b.N times and reports the median besides the mean.
func benchMedian(b *testing.B, op func()) {
	var took []time.Duration
	for b.Loop() {
		t0 := time.Now()
		op()
		took = append(took, time.Since(t0))
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
}

// seedOverview fills org acme with the benchmark's record, in bulk.
func seedOverview(b *testing.B, s *site) {
	b.Helper()
	ctx, now := dbtest.Operator(), time.Now().UTC()
	s.org(b, "acme")
	for i := range benchMembers {
		if _, err := s.Orgs.AddUser(ctx, "acme", orgs.NewUser{ID: fmt.Sprint("u", i), Name: fmt.Sprint("U", i), Password: userPW, Role: orgs.RoleMember}); err != nil {
			b.Fatal(err)
		}
	}
	t0 := time.Now()
	for _, st := range seedOverviewSQL(s.DB.Engine, now) {
		if _, err := dbtest.Exec(s.DB, st.sql, st.args...); err != nil {
			b.Fatalf("%v\n%s", err, st.sql)
		}
	}
	rollup := `INSERT INTO audit_daily (org_id, day, tool, outcome, calls, duration_ms, le_5, le_10, le_25, le_50, le_100, le_250, le_500, le_1000, le_2500, le_5000, le_10000, le_30000, le_inf)
		SELECT org_id, ` + s.DB.DaySQL("at") + `, tool, outcome, COUNT(*), SUM(duration_ms), ` + histogram.SumsSQL("duration_ms", audit.LatencyBoundsMS) + `
		FROM audit_events GROUP BY org_id, ` + s.DB.DaySQL("at") + `, tool, outcome`
	if _, err := dbtest.Exec(s.DB, rollup); err != nil {
		b.Fatal(err)
	}
	for _, t := range []string{"questions", "drafts", "audit_events", "audit_daily", "channel_messages"} {
		if _, err := dbtest.Exec(s.DB, "ANALYZE "+t); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%s: seeded %d questions, %d audit events, %d messages in %v", s.DB.Engine, benchQuestions, benchAuditRows, benchMessages, time.Since(t0).Round(time.Second))
}

// seedStatement is a statement of seedOverview and its arguments.
type seedStatement struct {
	sql  string
	args []any
}

// seedOverviewSQL are the bulk statements of seedOverview on engine: the
// questions, one every 77 seconds (100,000 over 89 days), each answered
// within two hours, their approved drafts of the questions (a tenth made pending again), the
// events of twelve tools with 2% internal errors and 2% invalid calls, and
// messages in #general, half posted by agents.
func seedOverviewSQL(engine db.Engine, now time.Time) []seedStatement {
	drafts := seedStatement{`INSERT INTO drafts (org_id, question_id, version, body, created_at, approved_at)
		SELECT org_id, id, 1, 'seeded', created_at, resolved_at FROM questions WHERE org_id = $1`, []any{"acme"}}
	pending := seedStatement{`UPDATE questions SET status = 'pending', resolved_at = NULL, resolution = NULL WHERE org_id = $1 AND id LIKE '%0'`, []any{"acme"}}
	channel := seedStatement{`INSERT INTO channels (org_id, name, created_by, created_at) VALUES ($1, 'general', 'alice', $2)`, []any{"acme", now}}
	if engine == db.Postgres {
		return []seedStatement{
			{`INSERT INTO questions (org_id, id, asker_id, recipient_id, body, status, created_at, resolved_at, resolution, recipient_handed_at, asker_handed_at)
				SELECT $1, 'qb_' || g.n, 'u' || (g.n % 20), 'u' || ((g.n + 1) % 20), 'seeded', 'answered',
				       $2::timestamptz - g.n * interval '77 seconds', $2::timestamptz - g.n * interval '77 seconds' + (g.n % 7200) * interval '1 second', 'seeded',
				       $2::timestamptz, $2::timestamptz
				FROM generate_series(1, $3::int) AS g(n)`, []any{"acme", now, benchQuestions}},
			drafts, pending, channel,
			{`INSERT INTO audit_events (at, org_id, user_id, tool, outcome, duration_ms)
				SELECT $2::timestamptz - g.n * $4::int * interval '1 second', $1, 'u' || (g.n % 20), 'tool_' || (g.n % 12),
				       CASE g.n % 50 WHEN 0 THEN 'internal' WHEN 1 THEN 'invalid' ELSE 'ok' END, (g.n % 997) * 0.37
				FROM generate_series(1, $3::int) AS g(n)`, []any{"acme", now, benchAuditRows, benchAuditSpacing}},
			{`INSERT INTO channel_messages (org_id, channel, seq, id, author_id, by_agent, body, created_at)
				SELECT $1, 'general', g.n, 'm_' || g.n, 'alice', g.n % 2 = 0, 'seeded', $2::timestamptz - g.n * interval '5 minutes'
				FROM generate_series(1, $3::int) AS g(n)`, []any{"acme", now, benchMessages}},
		}
	}
	at := now.Truncate(time.Second).Format("2006-01-02 15:04:05")
	return []seedStatement{
		{`INSERT INTO questions (org_id, id, asker_id, recipient_id, body, status, created_at, resolved_at, resolution, recipient_handed_at, asker_handed_at)
			WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < $3)
			SELECT $1, 'qb_' || n, 'u' || (n % 20), 'u' || ((n + 1) % 20), 'seeded', 'answered',
			       strftime('%Y-%m-%d %H:%M:%S+00:00', $2, '-' || (n * 77) || ' seconds'),
			       strftime('%Y-%m-%d %H:%M:%S+00:00', $2, '-' || (n * 77 - n % 7200) || ' seconds'), 'seeded', $2, $2
			FROM seq`, []any{"acme", at, benchQuestions}},
		drafts, pending, channel,
		{`INSERT INTO audit_events (at, org_id, user_id, tool, outcome, duration_ms)
			WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < $3)
			SELECT strftime('%Y-%m-%d %H:%M:%S+00:00', $2, '-' || (n * $4) || ' seconds'), $1, 'u' || (n % 20), 'tool_' || (n % 12),
			       CASE n % 50 WHEN 0 THEN 'internal' WHEN 1 THEN 'invalid' ELSE 'ok' END, (n % 997) * 0.37
			FROM seq`, []any{"acme", at, benchAuditRows, benchAuditSpacing}},
		{`INSERT INTO channel_messages (org_id, channel, seq, id, author_id, by_agent, body, created_at)
			WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < $3)
			SELECT $1, 'general', n, 'm_' || n, 'alice', n % 2 = 0, 'seeded', strftime('%Y-%m-%d %H:%M:%S+00:00', $2, '-' || (n * 300) || ' seconds')
			FROM seq`, []any{"acme", at, benchMessages}},
	}
}
