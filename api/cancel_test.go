package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCancelledWaitLeavesTheSessionUsable(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		alice := e.Org(t, era, "acme")["alice"]
		ctx, cancel := context.WithCancel(dbtest.Operator())
		done := make(chan error, 1)
		go func() {
			_, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "wait_for_inbox", Arguments: map[string]any{"timeout_s": 60}})
			done <- err
		}()
		waitForWaiters(t, e, 1)
		cancel()
		if err := <-done; err == nil {
			t.Fatal("a cancelled call returned no error")
		}
		// The client sent notifications/cancelled; its session must go on.
		ok(t, alice, "whoami", nil)

		// The server saw a cancellation, not a failure of its own.
		waitForWaiters(t, e, 0)
		events := auditEvents(t, alice, "acme", map[string]any{"tool": "wait_for_inbox"}, 1)
		if len(events) != 1 || events[0]["outcome"] != "cancelled" {
			t.Fatalf("audit of the cancelled wait = %v", events)
		}
		if strings.Contains(e.Logs.String(), `"level":"ERROR"`) {
			t.Fatalf("a cancelled call was logged as an error:\n%s", e.Logs.String())
		}
	})
}
