package audit

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/histogram"
)

// LatencyBoundsMS are the upper bounds, in milliseconds, of the latency
// buckets that audit_daily counts calls in (its le_ columns, le_inf above
// the last).
var LatencyBoundsMS = []float64{5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000}

// dayLayout is how audit_daily spells a UTC day.
const dayLayout = "2006-01-02"

// upsertDailySQL adds a batch's calls of one org, day, tool and outcome to
// their rollup row, in the transaction that inserts the events.
const upsertDailySQL = `INSERT INTO audit_daily (org_id, day, tool, outcome, calls, duration_ms, le_5, le_10, le_25, le_50, le_100, le_250, le_500, le_1000, le_2500, le_5000, le_10000, le_30000, le_inf)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
	ON CONFLICT (org_id, day, tool, outcome) DO UPDATE SET calls = audit_daily.calls + excluded.calls,
		duration_ms = audit_daily.duration_ms + excluded.duration_ms,
		le_5 = audit_daily.le_5 + excluded.le_5, le_10 = audit_daily.le_10 + excluded.le_10,
		le_25 = audit_daily.le_25 + excluded.le_25, le_50 = audit_daily.le_50 + excluded.le_50,
		le_100 = audit_daily.le_100 + excluded.le_100, le_250 = audit_daily.le_250 + excluded.le_250,
		le_500 = audit_daily.le_500 + excluded.le_500, le_1000 = audit_daily.le_1000 + excluded.le_1000,
		le_2500 = audit_daily.le_2500 + excluded.le_2500, le_5000 = audit_daily.le_5000 + excluded.le_5000,
		le_10000 = audit_daily.le_10000 + excluded.le_10000, le_30000 = audit_daily.le_30000 + excluded.le_30000,
		le_inf = audit_daily.le_inf + excluded.le_inf`

// dailySQL reads an org's rollup rows from a day on.
const dailySQL = `SELECT day, tool, outcome, calls, le_5, le_10, le_25, le_50, le_100, le_250, le_500, le_1000, le_2500, le_5000, le_10000, le_30000, le_inf
	FROM audit_daily WHERE org_id = $1 AND day >= $2`

// dailyKey names a rollup row.
type dailyKey struct{ org, day, tool, outcome string }

// rollup is a batch's calls per rollup row.
type rollup map[dailyKey]*histogram.Histogram

func rollupOf(batch []Event) (rollup, map[dailyKey]float64) {
	r, dur := rollup{}, map[dailyKey]float64{}
	for _, e := range batch {
		k := dailyKey{e.OrgID, e.At.UTC().Format(dayLayout), e.Tool, e.Outcome}
		h := r[k]
		if h == nil {
			h = histogram.New(LatencyBoundsMS)
			r[k] = h
		}
		h.Observe(e.DurationMS)
		dur[k] += e.DurationMS
	}
	return r, dur
}

// addDaily adds batch to the rollup rows, in order of their keys so that
// two writers' transactions lock the rows in the same order.
func addDaily(ctx context.Context, tx db.Querier, batch []Event) error {
	r, dur := rollupOf(batch)
	keys := make([]dailyKey, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		return a.org+"\x00"+a.day+"\x00"+a.tool+"\x00"+a.outcome < b.org+"\x00"+b.day+"\x00"+b.tool+"\x00"+b.outcome
	})
	for _, k := range keys {
		h := r[k]
		args := []any{k.org, k.day, k.tool, k.outcome, h.Total(), dur[k]}
		for _, c := range h.Counts {
			args = append(args, c)
		}
		if _, err := tx.Exec(ctx, upsertDailySQL, args...); err != nil {
			return fmt.Errorf("add to audit_daily: %w", err)
		}
	}
	return nil
}

// Daily is the calls of one day, tool and outcome, with their latencies.
type Daily struct {
	Day     time.Time
	Tool    string
	Outcome string
	Latency *histogram.Histogram
}

// Calls is how many calls the row counts.
func (d Daily) Calls() int64 { return d.Latency.Total() }

// Daily returns orgID's calls per UTC day, tool and outcome from the day
// of since on, from the rollup that the log keeps as it writes events, so
// that a range of days costs a row per day, tool and outcome however many
// events it holds.
//
// Returns only the database's errors.
func (l *Log) Daily(ctx context.Context, orgID string, since time.Time) ([]Daily, error) {
	rows, err := l.db.Query(ctx, dailySQL, orgID, since.UTC().Format(dayLayout))
	if err != nil {
		return nil, fmt.Errorf("read audit_daily: %w", err)
	}
	defer rows.Close()
	var out []Daily
	for rows.Next() {
		var day string
		d := Daily{Latency: histogram.New(LatencyBoundsMS)}
		dest := []any{&day, &d.Tool, &d.Outcome, new(int64)}
		for i := range d.Latency.Counts {
			dest = append(dest, &d.Latency.Counts[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("read audit_daily: %w", err)
		}
		if d.Day, err = time.Parse(dayLayout, day); err != nil {
			return nil, fmt.Errorf("read audit_daily: day %q: %w", day, err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
