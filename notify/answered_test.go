package notify_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/notify"
)

// TestAnsweredAtOnceIsNeverReminded has four askers each ask Bo 50
// questions, which Bo answers as soon as each is stored, while the worker
// reads the questions' outbox all along; then the reminder time passes.
// No answered question is reminded, however the worker's read of a
// question and its answer overlapped; the questions left waiting are.
// (The outbox read a question before the transaction that stored its
// reminder, so that an answer committed in between found no reminder to
// end: 1 to 2 in 100 were reminded on SQLite, 5 to 9 on Postgres.)
func TestAnsweredAtOnceIsNeverReminded(t *testing.T) {
	for _, e := range dbtest.Engines {
		t.Run(string(e), func(t *testing.T) { answeredAtOnceIsNeverReminded(t, e) })
	}
}

func answeredAtOnceIsNeverReminded(t *testing.T, e db.Engine) {
	d, n, _ := outboxWorld(t, e)
	workingClock(d, time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	ctx := dbtest.Operator()
	if _, err := n.SaveOrgSettings(ctx, "acme", notify.OrgSettings{TextMode: notify.TextNone, ReminderMinutes: 60}); err != nil {
		t.Fatal(err)
	}
	asker := outboxAsker(d, n)
	bo := ctalk.Caller{OrgID: "acme", UserID: "b"}
	const askers, each, waiting = 4, 50, 3
	var asking, reading sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, askers+1)
	for i := range askers {
		asking.Go(func() {
			for j := range each {
				q, err := asker.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, inbox.Ask{To: "b", Text: fmt.Sprintf("question %d of %d", j, i)})
				if err == nil {
					_, err = asker.AnswerDirectly(ctx, bo, q.ID, "answered at once")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	reading.Go(func() {
		for {
			select {
			case <-done:
				errs <- n.Expand(ctx)
				return
			default:
			}
			if err := n.Expand(ctx); err != nil {
				errs <- err
				return
			}
		}
	})
	asking.Wait()
	for i := range waiting {
		askB(t, asker, fmt.Sprintf("left waiting %d", i))
	}
	close(done)
	reading.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	drain(t, n)
	real := d.Now
	t.Cleanup(func() { d.Now = real })
	for _, m := range []time.Duration{61, 122, 300} {
		d.Now = func() time.Time { return real().Add(m * time.Minute) }
		drain(t, n)
	}
	answered := count(t, d, `SELECT COUNT(DISTINCT e.subject) FROM notify_events e JOIN questions q ON q.org_id = e.org_id AND q.id = e.subject
		WHERE e.kind = 'reminder' AND q.status = 'answered' AND EXISTS (SELECT 1 FROM notify_deliveries d WHERE d.event_id = e.id)`)
	if answered != 0 {
		t.Errorf("%d of %d questions answered at once were reminded", answered, askers*each)
	}
	left := count(t, d, `SELECT COUNT(DISTINCT e.subject) FROM notify_events e JOIN questions q ON q.org_id = e.org_id AND q.id = e.subject
		WHERE e.kind = 'reminder' AND q.status = 'pending' AND EXISTS (SELECT 1 FROM notify_deliveries d WHERE d.event_id = e.id)`)
	if left != waiting {
		t.Errorf("%d questions left waiting were reminded, want all %d", left, waiting)
	}
}
