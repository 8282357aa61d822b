package tools_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

func TestWaitSendsProgressWhenAsked(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		for _, era := range eras {
			t.Run(string(engine)+"/"+era, func(t *testing.T) {
				e := start(t, engine, options{API: func(c *api.Config) { c.ProgressEvery = 50 * time.Millisecond }})
				e.Org(t, era, "acme")
				token := e.Login(t, e.Connect(t, era, ""), "acme", "alice")

				// progress counts notifications for the call that asked for
				// them; stray counts any other, such as one for a call that
				// did not ask. A late notification of the first call still
				// carries its token, so it cannot be mistaken for a stray.
				var progress, stray atomic.Int32
				c := mcp.NewClient(&mcp.Implementation{Name: "progress-test", Version: "1"}, &mcp.ClientOptions{
					ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
						if req.Params.ProgressToken == "p1" {
							progress.Add(1)
						} else {
							stray.Add(1)
						}
					},
				})
				cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{
					Endpoint:             e.URL + "/mcp",
					HTTPClient:           &http.Client{Transport: testkit.Bearer(token)},
					DisableStandaloneSSE: true,
				}, &mcp.ClientSessionOptions{ProtocolVersion: era})
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()

				params := &mcp.CallToolParams{Name: "wait_for_inbox", Arguments: map[string]any{"timeout_s": 0.5}}
				params.SetProgressToken("p1")
				res, err := cs.CallTool(t.Context(), params)
				if err != nil || res.IsError {
					t.Fatalf("wait_for_inbox: %v %v", err, res)
				}
				if n := progress.Load(); n < 2 {
					t.Fatalf("got %d progress notifications during a 0.5 s wait at 50 ms, want several", n)
				}

				// Without a progress token, none are sent.
				if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "wait_for_inbox", Arguments: map[string]any{"timeout_s": 0.3}}); err != nil {
					t.Fatal(err)
				}
				if n := stray.Load(); n != 0 {
					t.Fatalf("got %d progress notifications for a call that did not ask", n)
				}
			})
		}
	}
}
