package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
)

// TestEventsStreamEndsAtSignOut: signing out ends the session's open
// /events streams at once, with nothing else happening to wake them (not
// at their next keep-alive), with an unauthorized error as their last
// event; the person's other session's stream stays open.
func TestEventsStreamEndsAtSignOut(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		bob, elsewhere := s.newClient(t, "acme", "bob"), s.newClient(t, "acme", "bob")
		st, kept := bob.openStream(t), elsewhere.openStream(t)
		st.counts(t)
		kept.counts(t)
		if code, body := bob.post("/signout", url.Values{}); code != http.StatusOK {
			t.Fatalf("sign out: %d %s", code, body)
		}
		if evs := st.ended(t); len(evs) != 1 || evs[0].name != "error" || !strings.Contains(evs[0].data, "unauthorized") {
			t.Fatalf("after sign-out the stream sent %v, want only an unauthorized error", evs)
		}
		if _, err := s.Inbox.Ask(dbtest.Operator(), acme("alice"), inbox.Ask{To: "bob", Text: "Still there?"}); err != nil {
			t.Fatal(err)
		}
		if c := kept.counts(t); c.Waiting != 1 {
			t.Fatalf("the other session's stream after the sign-out: %+v, want the question", c)
		}
	})
}
