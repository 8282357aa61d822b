package api_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db/dbtest"
)

// waitingStack returns the stack of the one goroutine blocked in a wait.
func waitingStack(t *testing.T) string {
	t.Helper()
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "wait.(*Broker).For(") {
			found = append(found, g)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d goroutines wait; want 1", len(found))
	}
	return found[0]
}

// TestWaitParksBeforeMCP checks that a waiting call identified by its
// Authorization header waits before mcp-go handles it, where it holds
// little memory, and still gets what arrives; and that a call identified by
// its auth_token argument, which mcp-go's handler must read, waits in the
// tool as before.
func TestWaitParksBeforeMCP(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			e := start(t, dbtest.Engines[0])
			u := e.Org(t, era, "acme")
			for _, c := range []struct {
				name   string
				args   map[string]any
				parked bool
			}{
				{"header", map[string]any{"timeout_s": 30}, true},
				{"auth_token", map[string]any{"timeout_s": 30, "auth_token": e.Login(t, e.Connect(t, era, ""), "acme", "alice")}, false},
			} {
				t.Run(c.name, func(t *testing.T) {
					cs := u["alice"]
					if !c.parked {
						cs = e.Connect(t, era, "")
					}
					got := make(chan map[string]any, 1)
					go func() { got <- ok(t, cs, "wait_for_inbox", c.args) }()
					waitForWaiters(t, e, 1)
					stack := waitingStack(t)
					inMCP := strings.Contains(stack, "mcp-go/server.(*MCPServer).HandleMessage")
					if parked := strings.Contains(stack, "parkWaits") && !inMCP; parked != c.parked {
						t.Errorf("parked before mcp-go: %v, want %v:\n%s", parked, c.parked, stack)
					}
					id := ok(t, u["bob"], "ask_person", map[string]any{"to_user_id": "alice", "question": "parked?"})["message_id"]
					if qs := (<-got)["questions"].([]any); len(qs) != 1 || qs[0].(map[string]any)["message_id"] != id {
						t.Errorf("wait_for_inbox = %v, want question %v", qs, id)
					}
				})
			}
		})
	}
}

// TestRefusedWaitIsNotParked checks that a waiting call the tool refuses is
// refused at once, not after waiting out its timeout.
func TestRefusedWaitIsNotParked(t *testing.T) {
	t.Parallel()
	e := start(t, dbtest.Engines[0])
	alice := e.Org(t, eraSessions, "acme")["alice"]
	fail(t, alice, "wait_for_inbox", map[string]any{"timeout_s": 120, "bogus": 1}, "unknown argument")
	fail(t, alice, "wait_for_reply", map[string]any{"timeout_s": 120, "message_id": 7}, "message_id")
}
