package tools_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestListenDeliversChannelUpdates: a 2026-07-28 client's
// subscriptions/listen for a channel gets its updates as a 2025-11-25
// session's event stream does, whichever replica the post reaches (on
// Postgres, two servers share the database), only for the channels the
// caller is in, and ends when the credential it was opened with is
// revoked on another replica, dropping its subscriptions.
func TestListenDeliversChannelUpdates(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			one := start(t, engine)
			two := one
			if engine == db.Postgres {
				two = start(t, engine, options{SharedWith: one})
			}
			u := two.Org(t, eraStateless, "acme")
			ok(t, u["alice"], "create_channel", map[string]any{"channel": "dev", "members": []string{"bob"}})
			ok(t, u["carol"], "create_channel", map[string]any{"channel": "secret", "private": true})
			token := two.Login(t, two.Connect(t, eraStateless, ""), "acme", "alice")
			cs, updates := testkit.SubscriberIn(t, one.URL, token, eraStateless)
			for _, uri := range []string{"ctalk://channels/dev", "ctalk://channels/secret"} {
				if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
					t.Fatalf("subscribe %s: %v", uri, err)
				}
			}
			onlyDevUpdates(t, u["bob"], updates, func() {
				ok(t, u["carol"], "post_message", map[string]any{"channel": "secret", "text": "not for alice"})
			})
			if n := countRows(t, one.DB, `SELECT COUNT(*) FROM channel_subscriptions`); n != 1 {
				t.Fatalf("%d subscriptions stored, want the listen's one", n)
			}

			// Revoked elsewhere: the listen ends and its subscription goes.
			ok(t, two.Connect(t, eraStateless, token), "logout", nil)
			testkit.WaitFor(t, 10*time.Second, "the listen's subscriptions dropped", func() (bool, error) {
				return countRows(t, one.DB, `SELECT COUNT(*) FROM channel_subscriptions`) == 0, nil
			})
			drained(updates)
			ok(t, u["bob"], "post_message", map[string]any{"channel": "dev", "text": "after the logout"})
			select {
			case uri := <-updates:
				t.Fatalf("notification for %s after the credential was revoked", uri)
			case <-time.After(time.Second):
			}
		})
	}
}

// TestListenWithMCPGo follows a channel with mcp-go's client of the
// 2026-07-28 protocol, over real HTTP: its Listen gets the channel's
// updates.
func TestListenWithMCPGo(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			e := start(t, engine)
			u := e.Org(t, eraStateless, "acme")
			ok(t, u["alice"], "create_channel", map[string]any{"channel": "dev", "members": []string{"bob"}})
			token := e.Login(t, e.Connect(t, eraStateless, ""), "acme", "alice")
			updates := make(chan string, 100)
			c, _ := mcpgoSession(t, e.URL, mcpgo.LATEST_PROTOCOL_VERSION, func(n mcpgo.JSONRPCNotification) {
				if n.Method == mcpgo.MethodNotificationResourceUpdated {
					uri, _ := n.Params.AdditionalFields["uri"].(string)
					updates <- uri
				}
			}, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
			ctx := t.Context()
			if v := c.ProtocolVersion(); v != eraStateless {
				t.Fatalf("mcp-go negotiated %s, want %s", v, eraStateless)
			}
			stop, err := c.ListenAsync(ctx, mcpgo.SubscriptionFilter{ResourceSubscriptions: []string{"ctalk://channels/dev"}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
			if uri := attached(t, updates, func() {
				ok(t, u["bob"], "post_message", map[string]any{"channel": "dev", "text": "are you there?"})
			}); uri != "ctalk://channels/dev" {
				t.Fatalf("notification for %s, want ctalk://channels/dev", uri)
			}
		})
	}
}

// TestListenStreamLimit: listens count among the four streams one user may
// hold on a server; a fifth is 429.
func TestListenStreamLimit(t *testing.T) {
	t.Parallel()
	e := start(t, db.SQLite)
	u := e.Org(t, eraStateless, "acme")
	ok(t, u["alice"], "create_channel", map[string]any{"channel": "dev"})
	token := e.Login(t, e.Connect(t, eraStateless, ""), "acme", "alice")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	listen := func() *http.Response {
		return statelessPost(t, ctx, e.URL, token, "subscriptions/listen", "", map[string]any{
			"notifications": map[string]any{"resourceSubscriptions": []string{"ctalk://channels/dev"}},
		})
	}
	for i := range 4 {
		if resp := listen(); resp.StatusCode != http.StatusOK {
			t.Fatalf("listen %d: %d", i, resp.StatusCode)
		}
	}
	if resp := listen(); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a fifth listen: %d, want 429", resp.StatusCode)
	}
}
