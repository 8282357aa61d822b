package inbox_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/wait"
)

// TestInboxHandsOverOnce checks that check_inbox hands over every question
// it shows, whether its page was all handed over already (read without a
// write) or not, so that no wait hands it over again.
func TestInboxHandsOverOnce(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(d)
		ctx := dbtest.Operator()
		ask := func(text string) string {
			t.Helper()
			q, err := s.Ask(ctx, acme("a"), inbox.Ask{To: "b", Text: text})
			if err != nil {
				t.Fatal(err)
			}
			return q.ID
		}
		page := func(want ...string) {
			t.Helper()
			items, _, err := s.Inbox(ctx, acme("b"), 10, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != len(want) {
				t.Fatalf("inbox holds %d questions, want %d", len(items), len(want))
			}
			for i, it := range items {
				if it.ID != want[i] {
					t.Errorf("question %d is %s, want %s", i, it.ID, want[i])
				}
			}
		}
		nothingToWaitFor := func() {
			t.Helper()
			got, err := s.WaitInbox(ctx, acme("b"), wait.Options{}, nil)
			if err != nil || !got.Empty() {
				t.Fatalf("a wait after check_inbox got %d questions (%v); want none: check_inbox handed them over", len(got.Questions), err)
			}
		}
		q1 := ask("first")
		page(q1)
		nothingToWaitFor()
		page(q1)
		q2 := ask("second")
		page(q1, q2)
		nothingToWaitFor()
		page(q1, q2)
		nothingToWaitFor()
	})
}

// TestConcurrentInboxChecksHandOverWhatTheyShow checks that check_inbox
// hands over every question it shows while other checks of the same inbox
// run and new questions arrive: whether a page was all handed over is read
// with the page, and a page that holds a question not yet handed over is
// read and marked in one transaction, so no later wait hands over a
// question a check showed, and the wait hands over every other one.
func TestConcurrentInboxChecksHandOverWhatTheyShow(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(d)
		ctx := dbtest.Operator()
		const asks = 20
		var (
			mu    sync.Mutex
			shown = map[string]bool{}
			asked []string
			wg    sync.WaitGroup
		)
		wg.Go(func() {
			for i := range asks {
				q, err := s.Ask(ctx, acme("a"), inbox.Ask{To: "b", Text: fmt.Sprint("question ", i)})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				asked = append(asked, q.ID)
				mu.Unlock()
			}
		})
		for range 4 {
			wg.Go(func() {
				for range 15 {
					items, _, err := s.Inbox(ctx, acme("b"), 50, "")
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for _, it := range items {
						shown[it.ID] = true
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		got, err := s.WaitInbox(ctx, acme("b"), wait.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range got.Questions {
			if shown[q.ID] {
				t.Errorf("a wait handed over %s, which check_inbox showed", q.ID)
			}
			shown[q.ID] = true
		}
		for _, id := range asked {
			if !shown[id] {
				t.Errorf("question %s was neither shown by check_inbox nor handed over by the wait", id)
			}
		}
	})
}
