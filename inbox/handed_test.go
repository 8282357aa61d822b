package inbox_test

import (
	"context"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
)

// TestInboxHandsOverOnce checks that check_inbox hands over every question
// it shows, whether its page was all handed over already (read without a
// write) or not, so that no wait hands it over again.
func TestInboxHandsOverOnce(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(d)
		ctx := context.Background()
		ask := func(text string) string {
			t.Helper()
			q, err := s.Ask(ctx, "acme", "a", inbox.Ask{To: "b", Text: text})
			if err != nil {
				t.Fatal(err)
			}
			return q.ID
		}
		page := func(want ...string) {
			t.Helper()
			items, _, err := s.Inbox(ctx, "acme", "b", 10, "")
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
			got, err := s.WaitInbox(ctx, "acme", "b", inbox.WaitOptions{})
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
