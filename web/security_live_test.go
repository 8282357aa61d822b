package web_test

import (
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/web"
)

// TestOpenStreamsHoldNoConnection: more open /events streams than the
// database pool has connections (every person at their cap) leave the
// pool idle between events, so the pages, the agents and the streams' own
// wake-ups keep working; a browser cannot starve the server of
// connections by opening pages.
func TestOpenStreamsHoldNoConnection(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		people := []string{"alice", "bob", "carol"}
		streams := map[string][]*stream{}
		for _, who := range people {
			c := s.newClient(t, "acme", who)
			for range web.MaxStreams {
				st := c.openStream(t)
				st.counts(t)
				streams[who] = append(streams[who], st)
			}
		}
		if open := len(people) * web.MaxStreams; open <= s.DB.Stats().MaxOpenConnections {
			t.Fatalf("%d streams do not outnumber the pool's %d connections", open, s.DB.Stats().MaxOpenConnections)
		}
		testkit.WaitFor(t, eventWait, "the pool to be idle with every stream open", func() (bool, error) {
			return s.DB.Stats().InUse == 0, nil
		})
		// A page and an ask still go through, and every stream of the
		// person asked is woken.
		if code, _ := s.newClient(t, "acme", "carol").get("/inbox"); code != 200 {
			t.Fatalf("a page with every stream open: %d", code)
		}
		if _, err := s.Inbox.Ask(dbtest.Operator(), acme("alice"), inbox.Ask{To: "bob", Text: "Still there?"}); err != nil {
			t.Fatal(err)
		}
		for i, st := range streams["bob"] {
			if c := st.counts(t); c.Waiting != 1 {
				t.Fatalf("bob's stream %d: %+v, want one waiting", i, c)
			}
		}
	})
}
