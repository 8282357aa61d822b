package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/orgs"
)

// TestRemovalHandsQuestionsToTheDelegate: an admin chooses on the admin
// page that a leaving member's questions go to their delegate; removing
// bob, away with carol as his delegate, then moves alice's question to
// carol instead of declining it.
func TestRemovalHandsQuestionsToTheDelegate(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		ctx := dbtest.Operator()
		s := start(t, engine)
		s.org(t, "acme")
		alice := s.newClient(t, "acme", "alice")
		if code, body := alice.post("/admin/settings", url.Values{"departure_questions": {"delegate"}}); code != http.StatusOK || !strings.Contains(body, `name="departure_questions" value="delegate" checked`) {
			t.Fatalf("choosing delegate: %d %s", code, body)
		}
		if code, _ := alice.post("/admin/settings", url.Values{"departure_questions": {"keep"}}); code != http.StatusBadRequest {
			t.Errorf("an unknown departure_questions: %d, want 400", code)
		}
		if _, err := s.Orgs.SetAway(ctx, acme("bob"), orgs.Away{Until: time.Now().Add(time.Hour), Delegate: "carol"}); err != nil {
			t.Fatal(err)
		}
		q, err := s.Inbox.Ask(ctx, acme("alice"), inbox.Ask{To: "bob", Text: "who has the deploy key?"})
		if err != nil {
			t.Fatal(err)
		}
		if code, body := alice.post("/admin/members/bob/remove", url.Values{"confirmed": {"yes"}}); code != http.StatusOK || !strings.Contains(body, "Member removed.") {
			t.Fatalf("removing bob: %d %s", code, body)
		}
		got, _, err := s.Inbox.Pending(ctx, acme("carol"), 10, "")
		if err != nil || len(got) != 1 || got[0].ID != q.ID {
			t.Errorf("carol's questions after bob's removal: %+v, %v; want alice's", got, err)
		}
	})
}
