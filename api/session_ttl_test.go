package api_test

import (
	"testing"
	"time"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestIdleSessionsAreForgotten: an MCP session of the 2025-11-25 protocol
// whose client went away without ending it is dropped from mcp-go's memory
// after the idle TTL, while a session that goes on calling and waiting, in
// waits that span the sweeps, is kept; and the forgotten session's client
// can still call on it.
func TestIdleSessionsAreForgotten(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			e := start(t, engine, options{API: func(c *api.Config) { c.SessionIdleTTL = ttl }})
			users := e.Org(t, eraSessions, "ttl")
			idle, busy := users["alice"], users["bob"]
			for name, cs := range map[string]string{"idle": idle.ID(), "busy": busy.ID()} {
				if !e.App.MCPSessionKnown(cs) {
					t.Fatalf("the %s session is not registered after initialize", name)
				}
			}
			// The busy agent calls, then waits (parked before mcp-go) for
			// three quarters of the TTL, across the sweeps, three times over,
			// while the idle one does nothing.
			for range 3 {
				ok(t, busy, "whoami", nil)
				ok(t, busy, "wait_for_inbox", map[string]any{"timeout_s": 1.5})
			}
			if !e.App.MCPSessionKnown(busy.ID()) {
				t.Error("a session that kept calling and waiting was forgotten")
			}
			err := testkit.Poll(dbtest.Operator(), 30*time.Second, 100*time.Millisecond, func() (bool, error) {
				return !e.App.MCPSessionKnown(idle.ID()), nil
			})
			if err != nil {
				t.Fatalf("a session idle for more than its TTL of %s is still registered: %v", ttl, err)
			}
			// Its id is checked by its MAC, not looked up: the client
			// that comes back is served.
			if u, _ := ok(t, idle, "whoami", nil)["user"].(map[string]any); u["user_id"] != "alice" {
				t.Errorf("whoami on a forgotten session returned user %v", u)
			}
		})
	}
}
