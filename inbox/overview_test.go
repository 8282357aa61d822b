package inbox_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
)

// TestOverviewCountsQuestionsPerDayAndTimesToAnswerAndApproval asks,
// approves and answers on a clock the test moves, and checks what the
// admins' overview reads back: per day, per bucket of waiting, per
// recipient, and nothing of another org.
func TestOverviewCountsQuestionsPerDayAndTimesToAnswerAndApproval(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		t0 := time.Date(2026, 11, 10, 9, 0, 0, 0, time.UTC)
		now := t0
		d.Now = func() time.Time { return now }
		s := rulesOrgs(t, d)
		humanMode(t, d)
		ctx := dbtest.Operator()
		at := func(dt time.Duration) { now = t0.Add(dt) }

		q1 := askAcme(t, s, "retry logic?")
		at(time.Minute)
		v1 := proposeAcme(t, s, q1.ID, "three retries")
		at(10 * time.Minute)
		must(t, func() error {
			_, err := s.Approve(ctx, ctalk.Caller{OrgID: "acme", UserID: "answerer"}, q1.ID, v1.Version)
			return err
		})
		at(20 * time.Minute)
		must(t, func() error {
			_, err := s.Send(ctx, ctalk.Caller{OrgID: "acme", UserID: "answerer"}, q1.ID, "three retries")
			return err
		})
		at(24 * time.Hour)
		q2 := askAcme(t, s, "deploy window?")
		askAcme(t, s, "still open?")
		if _, err := s.Ask(ctx, ctalk.Caller{OrgID: "other", UserID: "asker"}, inbox.Ask{To: "answerer", Text: "other org's"}); err != nil {
			t.Fatal(err)
		}
		at(27 * time.Hour)
		must(t, func() error {
			_, err := s.AnswerDirectly(ctx, ctalk.Caller{OrgID: "acme", UserID: "answerer"}, q2.ID, "Thursdays")
			return err
		})
		at(29 * time.Hour)

		o, err := s.Overview(ctx, "acme", t0)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fmt.Sprint(o.Days), "[{2026-11-10 1 1} {2026-11-11 2 1}]"; got != want {
			t.Errorf("days %s, want %s", got, want)
		}
		// Answers after 10 minutes (bucket up to 15: the approval sent it,
		// and the agent's send after 20 minutes changed nothing) and 3 hours
		// (up to 4); approvals after 10 minutes and 3 hours: a person's own
		// answer is their approval too.
		if got, want := fmt.Sprint(o.ToAnswer.Counts), "[0 0 1 0 0 0 1 0 0 0 0 0]"; got != want {
			t.Errorf("times to answer %s, want %s", got, want)
		}
		if got, want := fmt.Sprint(o.ToApproval.Counts), "[0 0 1 0 0 0 1 0 0 0 0 0]"; got != want {
			t.Errorf("times to approval %s, want %s", got, want)
		}
		if got, want := fmt.Sprint(o.Open), "[{answerer 0 1 0 0}]"; got != want {
			t.Errorf("open %s, want %s (the question of 5 hours ago)", got, want)
		}
		// The 10th has ended and is kept; the 11th, today, is counted anew.
		var kept []string
		must(t, func() error {
			return d.Each(ctx, `SELECT DISTINCT day FROM question_days WHERE org_id = 'acme' AND kind = 'done'`, nil, func(r *db.Rows) error {
				var day string
				err := r.Scan(&day)
				kept = append(kept, day)
				return err
			})
		})
		if fmt.Sprint(kept) != "[2026-11-10]" {
			t.Errorf("days kept %v, want the 10th alone", kept)
		}
		if again, err := s.Overview(ctx, "acme", t0); err != nil || fmt.Sprint(again.Days, again.ToAnswer.Counts, again.ToApproval.Counts) != fmt.Sprint(o.Days, o.ToAnswer.Counts, o.ToApproval.Counts) {
			t.Errorf("from the days kept: %+v (err %v), want what was counted", again, err)
		}
		later, err := s.Overview(ctx, "acme", t0.Add(24*time.Hour))
		if err != nil || len(later.Days) != 1 || later.ToAnswer.Total() != 1 || later.ToApproval.Total() != 1 {
			t.Errorf("from the 11th: days %v, %d answers, %d approvals (err %v); want the 11th's alone", later.Days, later.ToAnswer.Total(), later.ToApproval.Total(), err)
		}
		other, err := s.Overview(ctx, "other", t0)
		if err != nil || len(other.Days) != 1 || other.ToAnswer.Total() != 0 || fmt.Sprint(other.Open) != "[{answerer 0 1 0 0}]" {
			t.Errorf("org other: %+v (err %v); want its one open question alone", other, err)
		}
	})
}

func must(t *testing.T, fn func() error) {
	t.Helper()
	if err := fn(); err != nil {
		t.Fatal(err)
	}
}

// TestOverviewKeepsEachDayOnceUnderConcurrentReaders has eight admins open
// the overview of a range no one counted yet at once: each must see the
// same numbers, and each ended day is kept once.
func TestOverviewKeepsEachDayOnceUnderConcurrentReaders(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		t0 := time.Date(2026, 11, 10, 9, 0, 0, 0, time.UTC)
		var mu sync.Mutex
		now := t0
		d.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		s := rulesOrgs(t, d)
		ctx := dbtest.Operator()
		for day := range 5 {
			mu.Lock()
			now = t0.Add(time.Duration(day) * 24 * time.Hour)
			mu.Unlock()
			for range day + 1 {
				q := askAcme(t, s, "what now?")
				must(t, func() error {
					_, err := s.AnswerDirectly(ctx, ctalk.Caller{OrgID: "acme", UserID: "answerer"}, q.ID, "this")
					return err
				})
			}
		}
		mu.Lock()
		now = t0.Add(5 * 24 * time.Hour)
		mu.Unlock()
		got := make([]string, 8)
		var wg sync.WaitGroup
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o, err := s.Overview(ctx, "acme", t0)
				if err != nil {
					got[i] = err.Error()
					return
				}
				got[i] = fmt.Sprint(o.Days, o.ToAnswer.Total())
			}()
		}
		wg.Wait()
		want := "[{2026-11-10 1 1} {2026-11-11 2 2} {2026-11-12 3 3} {2026-11-13 4 4} {2026-11-14 5 5}] 15"
		for i, g := range got {
			if g != want {
				t.Errorf("reader %d saw %s, want %s", i, g, want)
			}
		}
		var doneRows, askedSum int64
		must(t, func() error {
			return d.QueryRow(ctx, `SELECT COUNT(*) FROM question_days WHERE org_id = 'acme' AND kind = 'done'`).Scan(&doneRows)
		})
		must(t, func() error {
			return d.QueryRow(ctx, `SELECT COALESCE(SUM(n), 0) FROM question_days WHERE org_id = 'acme' AND kind = 'asked'`).Scan(&askedSum)
		})
		if doneRows != 5 || askedSum != 15 {
			t.Errorf("kept %d days and %d questions asked, want the 5 ended days once and their 15 questions", doneRows, askedSum)
		}
	})
}
