package inbox_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
)

// TestForwardedFollowUpCarriesNoEarlierExchange: a follows up b's answer
// and b forwards the follow-up to c. c is handed the follow-up's own
// words, not a's and b's earlier exchange, which neither shared with c;
// a and b still see their thread.
func TestForwardedFollowUpCarriesNoEarlierExchange(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seedOrg(t, d, "acme", "a", "b", "c")
		s := newService(d)
		ctx := dbtest.Operator()
		q1, err := s.Ask(ctx, as("acme", "a"), inbox.Ask{To: "b", Text: "Which vendor won the bid?"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AnswerDirectly(ctx, as("acme", "b"), q1.ID, "Initech, at a price we keep to ourselves."); err != nil {
			t.Fatal(err)
		}
		q2, err := s.Ask(ctx, as("acme", "a"), inbox.Ask{To: "b", Text: "When does the contract start?", FollowUpOf: q1.ID})
		if err != nil {
			t.Fatal(err)
		}
		forwarded, err := s.Forward(ctx, as("acme", "b"), q2.ID, "c", "legal has the dates")
		if err != nil {
			t.Fatal(err)
		}
		if len(forwarded.Thread) != 1 {
			t.Errorf("b, who answered the thread, is shown %d of it, want 1", len(forwarded.Thread))
		}

		items, _, err := s.Inbox(ctx, as("acme", "c"), 10, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 1 || items[0].ID != q2.ID || items[0].Text != "When does the contract start?" {
			t.Fatalf("c's inbox: %+v, want the follow-up", items)
		}
		handed, _ := json.Marshal(items)
		for _, earlier := range []string{"Initech", "Which vendor"} {
			if strings.Contains(string(handed), earlier) {
				t.Errorf("c is handed %q, of a's and b's earlier exchange: %s", earlier, handed)
			}
		}
		asked, _, err := s.Asked(ctx, as("acme", "a"), 10, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range asked {
			if q.ID == q2.ID && (len(q.Thread) != 1 || q.Thread[0].Answer != "Initech, at a price we keep to ourselves.") {
				t.Errorf("a's own thread: %+v, want the earlier answer", q.Thread)
			}
		}
	})
}
