package scim_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
)

// ended is when something held open ended, and how.
type ended struct {
	at  time.Time
	how string
}

// waitOn calls tool with args on cs in the background and reports its end.
func waitOn(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) <-chan ended {
	t.Helper()
	out := make(chan ended, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			out <- ended{time.Now(), "error " + err.Error()}
			return
		}
		out <- ended{time.Now(), fmt.Sprintf("isError=%v %s", res.IsError, testkit.Text(res))}
	}()
	return out
}

// endOf waits for what ch reports, for at most 20 s.
func endOf(t *testing.T, what string, ch <-chan ended) ended {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not end", what)
		return ended{}
	}
}

// TestDepartureReachesAnotherReplica: two servers on one Postgres
// database; SCIM deactivates or deletes bob on the first. On the second,
// within a second, bob's wait for questions and his MCP event
// stream (GET /mcp) end refused and his token is refused; carol's agent,
// waiting there for the answer to her question to bob, is woken with what
// the org's departure_questions chose (declined, or handed to bob's
// delegate alice, whose agent waiting there is handed it), although the
// second server's safety re-check is an hour away.
func TestDepartureReachesAnotherReplica(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, method, body, departure string
	}{
		{"deactivated, declined", "PATCH", `{"Operations":[{"op":"replace","path":"active","value":false}]}`, orgs.DepartureDecline},
		{"deleted, delegated", "DELETE", "", orgs.DepartureDelegate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := start(t, db.Postgres)
			two := apitest.Start(t, e.srv.DB, func(w *app.Wiring) { w.Inbox.Recheck = time.Hour })
			e.bobLeaving(tc.departure)
			msgID := testkit.OK(t, e.mcp["carol"], "ask_person", map[string]any{"to_user_id": "bob", "question": "Where is the deploy runbook?", "ask_anyway": true})["message_id"].(string)

			// On the second server: bob's agent, handed the question,
			// waits for the next and holds his MCP event stream; carol's
			// and alice's agents wait.
			on := func(user string) (*mcp.ClientSession, string) {
				tok := apitest.Login(t, e.mcp["alice"], "acme", user)
				return testkit.Connect(t, two.URL, testkit.EraStateless, tok), tok
			}
			bob, bobToken := on("bob")
			testkit.OK(t, bob, "check_inbox", nil)
			carol, _ := on("carol")
			alice, _ := on("alice")
			testkit.OK(t, alice, "check_inbox", nil)
			sub, _ := testkit.Subscriber(t, two.URL, bobToken)
			stream := testkit.OpenStream(t, t.Context(), two.URL, bobToken, sub.ID())
			if stream.StatusCode != http.StatusOK {
				t.Fatalf("bob's GET /mcp: %d", stream.StatusCode)
			}
			streamEnded := make(chan ended, 1)
			go func() {
				b, _ := io.ReadAll(stream.Body)
				streamEnded <- ended{time.Now(), string(b)}
			}()
			before := two.Broker.Waiting()
			bobWait := waitOn(t, bob, "wait_for_inbox", map[string]any{"timeout_s": 60})
			carolWait := waitOn(t, carol, "wait_for_reply", map[string]any{"message_id": msgID, "timeout_s": 60})
			aliceWait := waitOn(t, alice, "wait_for_inbox", map[string]any{"timeout_s": 60})
			apitest.WaitForWaiters(t, before+3, two.Broker)

			sent := time.Now()
			if code, m, _ := call(t, e.srv.URL, e.token, tc.method, "/Users/bob", tc.body); code != http.StatusOK && code != http.StatusNoContent {
				t.Fatalf("%s bob: %d %v", tc.method, code, m)
			}
			for what, ch := range map[string]<-chan ended{"bob's wait_for_inbox": bobWait, "bob's GET /mcp": streamEnded} {
				got := endOf(t, what, ch)
				t.Logf("%s ended %v after the request was sent", what, got.at.Sub(sent).Round(time.Millisecond))
				if took := got.at.Sub(sent); took > time.Second {
					t.Errorf("%s ended %v after the departure, want within a second", what, took)
				}
				if what == "bob's wait_for_inbox" && !(strings.Contains(got.how, "nauthorized") || strings.Contains(got.how, "no longer")) {
					t.Errorf("%s ended with %s; want it refused", what, got.how)
				}
			}
			if code, _ := apitest.REST(t, two.URL, bobToken, "GET", "/api/v1/channels", ""); code != http.StatusUnauthorized {
				t.Errorf("bob's token on the second server after the departure: %d, want 401", code)
			}

			got := endOf(t, "carol's wait_for_reply", carolWait)
			t.Logf("carol's wait_for_reply woke %v after the request was sent", got.at.Sub(sent).Round(time.Millisecond))
			want := `"status":"declined"`
			if tc.departure == orgs.DepartureDelegate {
				want = `"to_user_id":"alice"`
			}
			if !strings.Contains(got.how, msgID) || !strings.Contains(got.how, want) {
				t.Errorf("carol's wait_for_reply = %s; want %s with %s", got.how, msgID, want)
			}
			if tc.departure == orgs.DepartureDecline && !strings.Contains(got.how, inbox.DepartedReason) {
				t.Errorf("carol's wait_for_reply = %s; want the reason %q", got.how, inbox.DepartedReason)
			}
			if tc.departure == orgs.DepartureDelegate {
				got := endOf(t, "alice's wait_for_inbox", aliceWait)
				if !strings.Contains(got.how, msgID) {
					t.Errorf("alice's wait_for_inbox = %s; want the question handed to her", got.how)
				}
			}
		})
	}
}
