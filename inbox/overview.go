package inbox

import (
	"context"
	"fmt"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/histogram"
)

// WaitBoundsSeconds are the upper bounds, in seconds, of the buckets that
// the overview counts the time to an answer and to an approval in: a
// minute, five, fifteen, half an hour, one, two, four and eight hours, a
// day, two, a week.
var WaitBoundsSeconds = []float64{60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800}

// Overview is what the admins' overview shows of an org's questions over a
// range of days.
type Overview struct {
	// Days are the days with questions asked or answered, oldest first.
	Days []DayCounts
	// ToAnswer counts the questions answered in the range by the seconds
	// from asking to the answer; ToApproval the drafts approved in it by
	// the seconds from asking to the approval.
	ToAnswer, ToApproval *histogram.Histogram
	// Open are the pending questions (whenever asked) per recipient, most
	// first.
	Open []OpenQuestions
}

// DayCounts is one UTC day's questions asked and answered.
type DayCounts struct {
	Day             string
	Asked, Answered int64
}

// OpenQuestions are one recipient's pending questions by how long they
// have waited.
type OpenQuestions struct {
	RecipientID string
	// Hour counts those asked within the hour, Day within a day (and not
	// the hour), Week within a week, Older before.
	Hour, Day, Week, Older int64
}

// Total is how many questions wait for the recipient.
func (o OpenQuestions) Total() int64 { return o.Hour + o.Day + o.Week + o.Older }

// overviewSQL are the statements of Overview on one engine: each reads a
// range of one org's rows through an index that leads with org_id.
type overviewSQL struct{ asked, answered, approved, open, cached, store string }

func newOverviewSQL(d *db.DB) overviewSQL {
	toAnswer := d.SecondsSQL("created_at", "resolved_at")
	toApproval := d.SecondsSQL("q.created_at", "d.approved_at")
	return overviewSQL{
		asked: `SELECT ` + d.DaySQL("created_at") + `, COUNT(*) FROM questions WHERE org_id = $1 AND created_at >= $2 AND created_at < $3 GROUP BY 1`,
		// The seconds of each row are worked out once, in a materialized
		// step, rather than once per bucket of the sums.
		answered: `WITH w AS MATERIALIZED (SELECT ` + d.DaySQL("resolved_at") + ` AS day, ` + toAnswer + ` AS secs
			FROM questions WHERE org_id = $1 AND status = 'answered' AND resolved_at >= $2 AND resolved_at < $3)
			SELECT day, ` + histogram.SumsSQL("secs", WaitBoundsSeconds) + ` FROM w GROUP BY day`,
		approved: `WITH w AS MATERIALIZED (SELECT ` + d.DaySQL("d.approved_at") + ` AS day, ` + toApproval + ` AS secs
			FROM drafts d JOIN questions q ON q.org_id = d.org_id AND q.id = d.question_id
			WHERE d.org_id = $1 AND d.approved_at IS NOT NULL AND d.approved_at >= $2 AND d.approved_at < $3)
			SELECT day, ` + histogram.SumsSQL("secs", WaitBoundsSeconds) + ` FROM w GROUP BY day`,
		open: `SELECT recipient_id, SUM(CASE WHEN created_at >= $2 THEN 1 ELSE 0 END),
			SUM(CASE WHEN created_at < $2 AND created_at >= $3 THEN 1 ELSE 0 END),
			SUM(CASE WHEN created_at < $3 AND created_at >= $4 THEN 1 ELSE 0 END),
			SUM(CASE WHEN created_at < $4 THEN 1 ELSE 0 END)
			FROM questions WHERE org_id = $1 AND status = 'pending' GROUP BY recipient_id`,
		cached: `SELECT day, kind, bucket, n FROM question_days WHERE org_id = $1 AND day >= $2 AND day < $3`,
		store: `INSERT INTO question_days (org_id, day, kind, bucket, n) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (org_id, day, kind, bucket) DO NOTHING`,
	}
}

// dayLayout is how days are spelled, in UTC.
const dayLayout = db.DayLayout

// dayStats are one day's questions asked, and answers and approvals by the
// time they took.
type dayStats struct {
	asked              int64
	answers, approvals *histogram.Histogram
}

// days are the stats of days by their day.
type days map[string]*dayStats

func (ds days) day(d string) *dayStats {
	if ds[d] == nil {
		ds[d] = &dayStats{answers: histogram.New(WaitBoundsSeconds), approvals: histogram.New(WaitBoundsSeconds)}
	}
	return ds[d]
}

// Overview returns orgID's questions asked and answered per day from the
// day of since on, the times to answers and approvals in that range, and
// the questions pending now per recipient. Days that have ended are
// counted once and kept (question_days); only the current day is counted
// on each call, so that the page costs the same at 100,000 questions as at
// a hundred.
//
// Returns only the database's errors.
func (s *Service) Overview(ctx context.Context, orgID string, since time.Time) (*Overview, error) {
	q := newOverviewSQL(s.db)
	o := &Overview{ToAnswer: histogram.New(WaitBoundsSeconds), ToApproval: histogram.New(WaitBoundsSeconds)}
	// The open questions are read beside the days, on a connection of
	// their own.
	var g errgroup.Group
	g.Go(func() (err error) { o.Open, err = s.openByRecipient(ctx, q, orgID); return })
	all, err := s.overviewDays(ctx, q, orgID, since)
	if werr := g.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}
	for d, st := range all {
		if st.asked > 0 || st.answers.Total() > 0 {
			o.Days = append(o.Days, DayCounts{Day: d, Asked: st.asked, Answered: st.answers.Total()})
		}
		o.ToAnswer.Add(st.answers)
		o.ToApproval.Add(st.approvals)
	}
	sort.Slice(o.Days, func(i, j int) bool { return o.Days[i].Day < o.Days[j].Day })
	return o, nil
}

// overviewDays are the stats of each day from the day of since on: the
// ended days kept, those not yet kept counted and kept, and the open days
// counted.
func (s *Service) overviewDays(ctx context.Context, q overviewSQL, orgID string, since time.Time) (days, error) {
	now := s.db.Now()
	since = since.UTC().Truncate(24 * time.Hour)
	closed := db.OpenDay(now)
	all, err := s.closedDays(ctx, q, orgID, since, closed)
	if err != nil {
		return nil, err
	}
	live, err := s.countDays(ctx, q, orgID, maxTime(since, closed), now.Add(24*time.Hour))
	if err != nil {
		return nil, err
	}
	for d, st := range live {
		all[d] = st
	}
	return all, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// countDays counts the questions asked, answered and approved per day from
// from until until, from the questions themselves.
func (s *Service) countDays(ctx context.Context, q overviewSQL, orgID string, from, until time.Time) (days, error) {
	out, args := days{}, []any{orgID, from, until}
	if !from.Before(until) {
		return out, nil
	}
	err := s.db.Each(ctx, q.asked, args, func(r *db.Rows) error {
		var d string
		var n int64
		err := r.Scan(&d, &n)
		out.day(d).asked = n
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("overview of questions asked: %w", err)
	}
	for _, c := range []struct {
		sql string
		h   func(*dayStats) *histogram.Histogram
	}{{q.answered, func(d *dayStats) *histogram.Histogram { return d.answers }}, {q.approved, func(d *dayStats) *histogram.Histogram { return d.approvals }}} {
		err := s.db.Each(ctx, c.sql, args, func(r *db.Rows) error {
			var d string
			h := histogram.New(WaitBoundsSeconds)
			err := r.Scan(append([]any{&d}, h.Dest()...)...)
			c.h(out.day(d)).Add(h)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("overview of answers and approvals: %w", err)
		}
	}
	return out, nil
}

// closedDays returns the stats of the ended days from since until closed:
// those kept, and the others counted now and kept.
func (s *Service) closedDays(ctx context.Context, q overviewSQL, orgID string, since, closed time.Time) (days, error) {
	out, done := days{}, map[string]bool{}
	err := s.db.Each(ctx, q.cached, []any{orgID, since.Format(dayLayout), closed.Format(dayLayout)}, func(r *db.Rows) error {
		var d, kind string
		var bucket int
		var n int64
		if err := r.Scan(&d, &kind, &bucket, &n); err != nil {
			return err
		}
		st := out.day(d)
		switch {
		case kind == "done":
			done[d] = true
		case kind == "asked":
			st.asked = n
		case kind == "answer" && bucket < len(st.answers.Counts):
			st.answers.Counts[bucket] = n
		case kind == "approval" && bucket < len(st.approvals.Counts):
			st.approvals.Counts[bucket] = n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("overview of days kept: %w", err)
	}
	missing := db.MissingDays(since, closed, done)
	if len(missing) == 0 {
		return out, nil
	}
	counted, err := s.countDays(ctx, q, orgID, missing[0], missing[len(missing)-1].Add(24*time.Hour))
	if err != nil {
		return nil, err
	}
	if err := s.keepDays(ctx, q, orgID, missing, counted); err != nil {
		return nil, err
	}
	for _, d := range missing {
		out[d.Format(dayLayout)] = counted.day(d.Format(dayLayout))
	}
	return out, nil
}

// keepDays stores the stats of the days missing, each marked done. A day
// another call kept meanwhile keeps its rows: both counted the same.
func (s *Service) keepDays(ctx context.Context, q overviewSQL, orgID string, missing []time.Time, counted days) error {
	return s.db.Tx(ctx, func(tx db.Querier) error {
		for _, t := range missing {
			d := t.Format(dayLayout)
			st := counted.day(d)
			rows := [][2]any{{"done", 0}}
			if st.asked > 0 {
				rows = append(rows, [2]any{"asked", 0})
			}
			for kind, h := range map[string]*histogram.Histogram{"answer": st.answers, "approval": st.approvals} {
				for i, n := range h.Counts {
					if n > 0 {
						rows = append(rows, [2]any{kind, i})
					}
				}
			}
			for _, r := range rows {
				if _, err := tx.Exec(ctx, q.store, orgID, d, r[0], r[1], st.count(r[0].(string), r[1].(int))); err != nil {
					return fmt.Errorf("keep the overview's days: %w", err)
				}
			}
		}
		return nil
	})
}

// count is the n of a row of question_days.
func (st *dayStats) count(kind string, bucket int) int64 {
	switch kind {
	case "asked":
		return st.asked
	case "answer":
		return st.answers.Counts[bucket]
	case "approval":
		return st.approvals.Counts[bucket]
	}
	return 0
}

func (s *Service) openByRecipient(ctx context.Context, q overviewSQL, orgID string) ([]OpenQuestions, error) {
	now := s.db.Now()
	var out []OpenQuestions
	err := s.db.Each(ctx, q.open, []any{orgID, now.Add(-time.Hour), now.Add(-24 * time.Hour), now.Add(-7 * 24 * time.Hour)}, func(r *db.Rows) error {
		var o OpenQuestions
		err := r.Scan(&o.RecipientID, &o.Hour, &o.Day, &o.Week, &o.Older)
		out = append(out, o)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("overview of open questions: %w", err)
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := out[i].Total(), out[j].Total(); a != b {
			return a > b
		}
		return out[i].RecipientID < out[j].RecipientID
	})
	return out, nil
}
