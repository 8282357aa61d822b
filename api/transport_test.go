package api_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestNoStandaloneStream: GET /mcp, the stream that carries only what a
// server sends unasked, is answered 405 at once to a caller without a token
// instead of being held open for anyone; clients that ask for it still work.
// (TestEventStreamLimits covers signed-in callers.)
func TestNoStandaloneStream(t *testing.T) {
	t.Parallel()
	e := start(t, db.SQLite)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, e.URL+"/mcp", nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("MCP-Protocol-Version", era)
			ctx, cancel := context.WithTimeout(dbtest.Operator(), 10*time.Second)
			defer cancel()
			resp, err := http.DefaultClient.Do(req.WithContext(ctx))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(resp.Header.Get("Allow"), "POST") || !strings.Contains(string(b), "only to a signed-in session") {
				t.Fatalf("GET /mcp: %d, Allow %q, %s; want 405 with Allow and a reason", resp.StatusCode, resp.Header.Get("Allow"), b)
			}

			// The official SDK opens the stream unless told not to; on 405 it
			// carries on without it.
			c := mcp.NewClient(&mcp.Implementation{Name: "stream-test", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.URL + "/mcp?setup=1", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			ok(t, cs, "register_organization", map[string]any{"org_id": "acme-" + strings.ReplaceAll(era, "-", ""), "name": "Acme", "admin_password": adminPW})
		})
	}
}

// TestWaitOutlivesTheBodyReadDeadline: the read deadline that cuts a stalled
// body must be gone once the body is in (net/http lifts it), so a wait
// longer than it, with or without a progress stream, ends on its own terms.
func TestWaitOutlivesTheBodyReadDeadline(t *testing.T) {
	t.Parallel()
	e := start(t, db.SQLite, options{API: func(c *api.Config) {
		c.ReadTimeout = 100 * time.Millisecond
		c.ProgressEvery = 50 * time.Millisecond
	}})
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			alice := e.Org(t, era, "acme-"+strings.ReplaceAll(era, "-", ""))["alice"]
			w := ok(t, alice, "wait_for_inbox", map[string]any{"timeout_s": 0.6})
			if w["timed_out"] != true {
				t.Fatalf("wait_for_inbox = %v, want it timed out on its own", w)
			}
			params := &mcp.CallToolParams{Name: "wait_for_inbox", Arguments: map[string]any{"timeout_s": 0.6}}
			params.SetProgressToken("p")
			res, err := alice.CallTool(t.Context(), params)
			if err != nil || res.IsError {
				t.Fatalf("wait_for_inbox with progress: %v %v", err, res)
			}
		})
	}
}
