package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/db"
)

func TestWholeFlowThroughALoadBalancerOverTwoReplicas(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			// The balancer reaches the replicas on loopback with the public
			// name in Host, so they must be told that name (see hostPolicy).
			public := func(c *api.Config) { c.PublicURL = "https://ctalk.example.com" }
			one := start(t, db.Postgres, options{API: public})
			two := start(t, db.Postgres, options{SharedWith: one, API: public})
			lb, hits := roundRobin(t, one, two)
			e := &env{URL: lb.URL, DB: one.DB}

			u := e.Org(t, era, "acme")
			bob, alice := u["bob"], u["alice"]
			who := ok(t, alice, "whoami", nil)
			if who["user"].(map[string]any)["user_id"] != "alice" {
				t.Fatalf("whoami through the balancer = %v", who)
			}

			// alice waits on whichever replica the balancer picks; bob's ask
			// lands on either; the wake-up crosses replicas when it must.
			got := make(chan map[string]any, 1)
			go func() { got <- ok(t, alice, "wait_for_inbox", map[string]any{"timeout_s": 60}) }()
			waitForWaiters(t, one, 1, two)
			id := ok(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": "through the balancer?"})["message_id"].(string)
			select {
			case w := <-got:
				if qs := w["questions"].([]any); len(qs) != 1 || qs[0].(map[string]any)["message_id"] != id {
					t.Fatalf("wait_for_inbox = %v", w)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the waiting agent was not woken through the balancer")
			}
			ok(t, alice, "propose_response", map[string]any{"message_id": id, "draft_text": "yes"})
			replies := make(chan map[string]any, 1)
			go func() { replies <- ok(t, bob, "wait_for_reply", map[string]any{"message_id": id, "timeout_s": 60}) }()
			waitForWaiters(t, one, 1, two)
			ok(t, alice, "send_response", map[string]any{"message_id": id, "final_text": "yes"})
			select {
			case r := <-replies:
				if rs := r["replies"].([]any); len(rs) != 1 || rs[0].(map[string]any)["answer"] != "yes" {
					t.Fatalf("wait_for_reply = %v", r)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the answer did not reach the waiting agent through the balancer")
			}
			// Logout on one replica takes effect there at once and on the
			// other when its notification arrives, within auth.TokenCacheTTL.
			ok(t, alice, "logout", nil)
			awaitRefused(t, alice)
			for range 2 {
				if _, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "whoami"}); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
					t.Fatalf("whoami after logout: %v, want HTTP 401", err)
				}
			}
			if (*hits)[0].Load() < 5 || (*hits)[1].Load() < 5 {
				t.Fatalf("requests per replica: %d and %d; the balancer did not spread them", (*hits)[0].Load(), (*hits)[1].Load())
			}
		})
	}
}
