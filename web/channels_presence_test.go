package web_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestChannelMembersPresence: a channel's member list says, in words, who
// has an agent waiting for messages now, who was active lately and who is
// away, with when each was last seen.
func TestChannelMembersPresence(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		bob := s.newClient(t, "acme", "bob")
		bob.post("/channels", url.Values{"name": {"dev"}})
		alice := s.agent(t, "acme", "alice")
		testkit.OK(t, alice, "join_channel", map[string]any{"channel": "dev"})
		if _, err := s.Channels.Join(dbtest.Operator(), acme("carol"), "dev"); err != nil {
			t.Fatal(err)
		}

		member := func(id string) func() (bool, string) {
			return func() (bool, string) {
				_, page := bob.get("/channels/dev")
				i := strings.Index(page, `<a href="/people/`+id+`">`)
				if i < 0 {
					return false, page
				}
				end := strings.Index(page[i:], "</li>")
				return true, page[i : i+end]
			}
		}
		testkit.WaitFor(t, 10*time.Second, "alice shown active", func() (bool, error) {
			_, li := member("alice")()
			return strings.Contains(li, `<span class="tag">active</span>`) && strings.Contains(li, "last seen <time"), nil
		})
		if _, li := member("carol")(); !strings.Contains(li, `<span class="tag">away</span>`) || !strings.Contains(li, "not seen yet") {
			t.Fatalf("carol, who never called, is shown as %s", li)
		}

		done := make(chan error, 1)
		go func() {
			_, err := testkit.CallTool(dbtest.Operator(), alice, "wait_for_message", map[string]any{"channel": "dev", "timeout_s": 60})
			done <- err
		}()
		testkit.WaitFor(t, 10*time.Second, "alice shown waiting", func() (bool, error) {
			_, li := member("alice")()
			return strings.Contains(li, `<span class="tag">waiting: their agent is listening</span>`), nil
		})
		bob.post("/channels/dev/messages", url.Values{"text": {"here you go"}})
		if err := <-done; err != nil {
			t.Fatalf("alice's wait: %v", err)
		}
	})
}
