package inbox

import (
	"context"
	"fmt"
	"sort"
	"time"

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
type overviewSQL struct{ asked, answered, approved, open string }

func newOverviewSQL(d *db.DB) overviewSQL {
	toAnswer := d.SecondsSQL("created_at", "resolved_at")
	toApproval := d.SecondsSQL("q.created_at", "d.approved_at")
	return overviewSQL{
		asked: `SELECT ` + d.DaySQL("created_at") + `, COUNT(*) FROM questions WHERE org_id = $1 AND created_at >= $2 GROUP BY 1`,
		answered: `SELECT ` + d.DaySQL("resolved_at") + `, COUNT(*), ` + histogram.SumsSQL(toAnswer, WaitBoundsSeconds) + `
			FROM questions WHERE org_id = $1 AND status = 'answered' AND resolved_at >= $2 GROUP BY 1`,
		approved: `SELECT ` + histogram.SumsSQL(toApproval, WaitBoundsSeconds) + `
			FROM drafts d JOIN questions q ON q.org_id = d.org_id AND q.id = d.question_id
			WHERE d.org_id = $1 AND d.approved_at IS NOT NULL AND d.approved_at >= $2`,
		open: `SELECT recipient_id, SUM(CASE WHEN created_at >= $2 THEN 1 ELSE 0 END),
			SUM(CASE WHEN created_at < $2 AND created_at >= $3 THEN 1 ELSE 0 END),
			SUM(CASE WHEN created_at < $3 AND created_at >= $4 THEN 1 ELSE 0 END),
			SUM(CASE WHEN created_at < $4 THEN 1 ELSE 0 END)
			FROM questions WHERE org_id = $1 AND status = 'pending' GROUP BY recipient_id`,
	}
}

// Overview returns orgID's questions asked and answered per day from the
// day of since on, the times to answers and approvals in that range, and
// the questions pending now per recipient.
//
// Returns only the database's errors.
func (s *Service) Overview(ctx context.Context, orgID string, since time.Time) (*Overview, error) {
	q := newOverviewSQL(s.db)
	since = since.UTC().Truncate(24 * time.Hour)
	o := &Overview{ToAnswer: histogram.New(WaitBoundsSeconds), ToApproval: histogram.New(WaitBoundsSeconds)}
	days, err := s.overviewDays(ctx, q, orgID, since, o.ToAnswer)
	if err != nil {
		return nil, err
	}
	o.Days = days
	if err := s.db.QueryRow(ctx, q.approved, orgID, since).Scan(o.ToApproval.Dest()...); err != nil {
		return nil, fmt.Errorf("overview of approvals: %w", err)
	}
	if o.Open, err = s.openByRecipient(ctx, q, orgID); err != nil {
		return nil, err
	}
	return o, nil
}

// overviewDays counts the questions asked and answered per day, adding the
// answers' times to toAnswer.
func (s *Service) overviewDays(ctx context.Context, q overviewSQL, orgID string, since time.Time, toAnswer *histogram.Histogram) ([]DayCounts, error) {
	byDay := map[string]*DayCounts{}
	day := func(d string) *DayCounts {
		if byDay[d] == nil {
			byDay[d] = &DayCounts{Day: d}
		}
		return byDay[d]
	}
	err := s.db.Each(ctx, q.asked, []any{orgID, since}, func(r *db.Rows) error {
		var d string
		var n int64
		err := r.Scan(&d, &n)
		day(d).Asked = n
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("overview of questions asked: %w", err)
	}
	err = s.db.Each(ctx, q.answered, []any{orgID, since}, func(r *db.Rows) error {
		var d string
		var n int64
		h := histogram.New(WaitBoundsSeconds)
		err := r.Scan(append([]any{&d, &n}, h.Dest()...)...)
		day(d).Answered = n
		toAnswer.Add(h)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("overview of questions answered: %w", err)
	}
	return sortedDays(byDay), nil
}

func sortedDays(byDay map[string]*DayCounts) []DayCounts {
	out := make([]DayCounts, 0, len(byDay))
	for _, d := range byDay {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Day < out[j].Day })
	return out
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
