package api_test

import (
	"testing"
)

// TestParkedWaitIsPresence: an agent whose wait_for_inbox or wait_for_reply
// is parked before mcp-go (see parkWaits) reads as waiting to its
// coworkers, as one waiting inside a tool does.
func TestParkedWaitIsPresence(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		alice, bob := u["alice"], u["bob"]
		ok(t, alice, "create_channel", map[string]any{"channel": "dev", "members": []string{"bob"}})
		done := make(chan map[string]any, 1)
		go func() { done <- ok(t, bob, "wait_for_inbox", map[string]any{"timeout_s": 60}) }()
		eventually(t, alice, "bob", "dev", "waiting")
		ok(t, alice, "ask_person", map[string]any{"to_user_id": "bob", "question": "are you there?"})
		if got := <-done; got["timed_out"] == true {
			t.Fatalf("the question did not end bob's wait: %v", got)
		}
		eventually(t, alice, "bob", "dev", "active")
	})
}
