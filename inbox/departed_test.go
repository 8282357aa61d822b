package inbox_test

import (
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/wait"
)

// TestDepartedHandsOverQuestionsWaitingForInformation: of the questions
// open for b when b leaves, the one waiting for b and the one waiting for
// its asker's information (needs_info) go alike: handed to b's delegate c,
// the second still waiting, the asker's agent woken with both moves, and
// the asker's information then reaching c; or, with no delegate, both
// declined to their asker with the reason. Handing over again does
// nothing.
func TestDepartedHandsOverQuestionsWaitingForInformation(t *testing.T) {
	for _, delegate := range []string{"c", ""} {
		t.Run("delegate="+delegate, func(t *testing.T) {
			dbtest.Run(t, func(t *testing.T, d *db.DB) {
				ctx := dbtest.Operator()
				seedOrg(t, d, "acme", "a", "b", "c")
				s := newService(d)
				waiting, err := s.Ask(ctx, as("acme", "a"), inbox.Ask{To: "b", Text: "is it safe?"})
				if err != nil {
					t.Fatal(err)
				}
				needsInfo, err := s.Ask(ctx, as("acme", "a"), inbox.Ask{To: "b", Text: "can we ship?"})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.RequestInfo(ctx, as("acme", "b"), needsInfo.ID, "which release?"); err != nil {
					t.Fatal(err)
				}
				if _, err := s.WaitReply(ctx, as("acme", "a"), "", wait.Options{}); err != nil {
					t.Fatal(err)
				}
				got := make(chan []*inbox.Question, 1)
				go func() {
					rs, err := s.WaitReply(ctx, as("acme", "a"), "", wait.Options{Timeout: 10 * time.Second})
					if err != nil {
						t.Error(err)
					}
					got <- rs
				}()
				waitForWaiters(t, s, 1)
				if _, err := dbtest.Exec(d, `UPDATE users SET removed_at = $1 WHERE org_id = 'acme' AND id = 'b'`, d.Now()); err != nil {
					t.Fatal(err)
				}

				out, err := s.HandOverForDeparted(ctx, "acme", "b", delegate)
				if err != nil {
					t.Fatal(err)
				}
				want := inbox.Departed{Declined: 2}
				if delegate != "" {
					want = inbox.Departed{Delegated: 2}
				}
				if out != want {
					t.Errorf("handed over %+v, want %+v", out, want)
				}
				byID := map[string]*inbox.Question{}
				for _, q := range <-got {
					byID[q.ID] = q
				}
				for _, q := range []struct {
					id, status string
				}{{waiting.ID, inbox.StatusPending}, {needsInfo.ID, inbox.StatusNeedsInfo}} {
					r := byID[q.id]
					switch {
					case r == nil:
						t.Errorf("the asker's waiting agent was not woken with %s: %v", q.id, byID)
					case delegate == "" && (r.Status != inbox.StatusDeclined || r.Reason != inbox.DepartedReason):
						t.Errorf("%s without a delegate: %s %q, want declined %q", q.id, r.Status, r.Reason, inbox.DepartedReason)
					case delegate != "" && (r.Status != q.status || r.To != "c"):
						t.Errorf("%s with a delegate: %s to %s, want %s to c", q.id, r.Status, r.To, q.status)
					}
				}
				if again, err := s.HandOverForDeparted(ctx, "acme", "b", delegate); err != nil || again != (inbox.Departed{}) {
					t.Errorf("handing over again: %+v, %v; want nothing", again, err)
				}
				if delegate == "" {
					return
				}
				if _, err := s.ProvideInfo(ctx, as("acme", "a"), needsInfo.ID, "release 2.0"); err != nil {
					t.Fatal(err)
				}
				items, _, err := s.Inbox(ctx, as("acme", "c"), 10, "")
				if err != nil {
					t.Fatal(err)
				}
				if len(items) != 2 || items[1].ID != needsInfo.ID || items[1].Status != inbox.StatusPending || len(items[1].Steps) != 3 || items[1].Steps[2].Note != "release 2.0" {
					t.Fatalf("c's agent is handed %+v; want both questions, the second with the information", items)
				}
			})
		})
	}
}
