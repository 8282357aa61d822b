package inbox_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/notify"
)

// TestConcurrentDecisionsSendOneAnswer: a person's approval or edit sends
// the answer, so it races with their agent's send and with their own
// decision made twice (two tabs, a double click, another door). Whatever
// the order, exactly one call sends, the answer is stored and notified
// once, and every other call either finds that very text sent (Already),
// is refused with a conflict that quotes it, or, the agent's send in human
// mode, came before the approval and is refused as not approved yet.
func TestConcurrentDecisionsSendOneAnswer(t *testing.T) {
	t.Parallel()
	type caller func(s *inbox.Service, id string) (*inbox.Sent, error)
	var (
		approve = func(s *inbox.Service, id string) (*inbox.Sent, error) {
			return s.Approve(dbtest.Operator(), acme("answerer"), id, 1)
		}
		send = func(text string) caller {
			return func(s *inbox.Service, id string) (*inbox.Sent, error) {
				return s.Send(dbtest.Operator(), acme("answerer"), id, text)
			}
		}
		edit = func(text string) caller {
			return func(s *inbox.Service, id string) (*inbox.Sent, error) {
				return s.Edit(dbtest.Operator(), acme("answerer"), id, 1, text)
			}
		}
		answer = func(s *inbox.Service, id string) (*inbox.Sent, error) {
			return s.AnswerDirectly(dbtest.Operator(), acme("answerer"), id, "the person's own")
		}
	)
	cases := []struct {
		name    string
		callers []caller
	}{
		{"an approval and the agent's send", []caller{approve, send("draft")}},
		{"two approvals", []caller{approve, approve}},
		{"two approvals and two sends", []caller{approve, approve, send("draft"), send("draft")}},
		{"an edit and the agent's send", []caller{edit("edited"), send("draft")}},
		{"two edits of the same text", []caller{edit("edited"), edit("edited")}},
		{"an edit and an approval", []caller{edit("edited"), approve}},
		{"an answer, an approval and a send", []caller{answer, approve, send("draft")}},
	}
	eachMode(t, func(t *testing.T, d *db.DB, s *inbox.Service, _ string) {
		// The asker can be reached, so that each answer queues its
		// notification.
		n := notify.NewService(d, notify.DefaultConfig(), nil)
		s.Notify(n)
		if _, _, err := n.AddWebhook(dbtest.Operator(), "acme", "asker", "asker", "https://hooks.example.net/asker", notify.FormatJSON); err != nil {
			t.Fatal(err)
		}
		if _, err := n.SaveSettings(dbtest.Operator(), acme("asker"), notify.Settings{Channels: map[notify.Kind][]string{notify.KindAnswered: {notify.ChannelWebhook}}}); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			for round := range 8 {
				q := askAcme(t, s, fmt.Sprintf("%s, round %d?", c.name, round))
				proposeAcme(t, s, q.ID, "draft")
				results := make([]*inbox.Sent, len(c.callers))
				errs := make([]error, len(c.callers))
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i, call := range c.callers {
					wg.Go(func() { <-start; results[i], errs[i] = call(s, q.ID) })
				}
				close(start)
				wg.Wait()

				what := fmt.Sprintf("%s, round %d", c.name, round)
				var answer string
				if err := d.QueryRow(dbtest.Operator(), `SELECT resolution FROM questions WHERE id = $1 AND status = 'answered'`, q.ID).Scan(&answer); err != nil {
					t.Fatalf("%s: the stored answer: %v", what, err)
				}
				sent := 0
				for i := range c.callers {
					switch {
					case errs[i] == nil && !results[i].Already:
						sent++
						if results[i].Answer != answer {
							t.Errorf("%s: caller %d sent %q, but %q is stored", what, i, results[i].Answer, answer)
						}
					case errs[i] == nil:
						if results[i].Answer != answer {
							t.Errorf("%s: caller %d found %q sent, but %q is stored", what, i, results[i].Answer, answer)
						}
					case errors.As(errs[i], new(*inbox.NotApprovedError)):
						// In human mode, the agent's send before the
						// person's approval sends nothing.
					default:
						wantRefusal(t, fmt.Sprintf("%s: caller %d", what, i), errs[i], ctalk.EConflict, fmt.Sprintf("%q", answer))
					}
				}
				if sent != 1 {
					t.Fatalf("%s: %d calls sent the answer (results %v, errors %v); want exactly one", what, sent, results, errs)
				}
				var notified int
				if err := d.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM notify_events WHERE kind = 'answered' AND subject = $1`, q.ID).Scan(&notified); err != nil {
					t.Fatal(err)
				}
				if notified != 1 {
					t.Fatalf("%s: the asker was notified of %d answers; want 1", what, notified)
				}
			}
		}
	})
}
