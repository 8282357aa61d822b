package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db/dbtest"
)

// TestSessionsBelongToTheirUser: an MCP session is bound to the org and
// user whose credential initialized it. Another user of the org, a user of
// the same name in another org, and a caller without credential get 404
// for every request on it (POST, GET event stream, DELETE), so they can
// neither read its notifications nor end it; its owner keeps using it.
func TestSessionsBelongToTheirUser(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine)
			u := e.Org(t, eraSessions, "acme")
			e.Org(t, eraSessions, "other")
			ok(t, u["alice"], "create_channel", map[string]any{"channel": "dev", "members": []string{"bob"}})
			anon := e.Connect(t, eraSessions, "")
			alice := e.Login(t, anon, "acme", "alice")
			bob := e.Login(t, anon, "acme", "bob")
			otherAlice := e.Login(t, anon, "other", "alice")

			cs, updates := subscriber(t, e.URL, alice)
			if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "ctalk://channels/dev"}); err != nil {
				t.Fatal(err)
			}
			sid := cs.ID()
			// The client opens its event stream in the background after
			// initialize; under load it may not be attached yet, and a post
			// before then reaches no stream. Wait until one reaches it, then
			// for the notifications of any further posts, so that the one
			// awaited at the end can only come from the stream surviving all
			// that follows.
			post := func() { ok(t, u["bob"], "post_message", map[string]any{"channel": "dev", "text": "still there?"}) }
			if uri := attached(t, updates, post); uri != "ctalk://channels/dev" {
				t.Fatalf("notification for %s", uri)
			}
			drained(updates)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			ping := `{"jsonrpc":"2.0","id":9,"method":"ping"}`
			for who, token := range map[string]string{"bob": bob, "alice of another org": otherAlice, "no credential": ""} {
				for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
					body := ""
					if m == http.MethodPost {
						body = ping
					}
					resp := rawMCP(t, ctx, m, e.URL, token, sid, body)
					if resp.StatusCode != http.StatusNotFound {
						t.Errorf("%s %s on alice's session: %d, want 404", who, m, resp.StatusCode)
					}
				}
			}
			// Alice herself may use her session from anywhere.
			if resp := rawMCP(t, ctx, http.MethodPost, e.URL, alice, sid, ping); resp.StatusCode != http.StatusOK {
				t.Errorf("alice's own ping on her session: %d", resp.StatusCode)
			}
			// A session initialized without a credential holds no stream
			// (405: clients take it as "no stream"), and anyone may use it.
			anonSID := initSession(t, e.URL, "")
			if resp := rawMCP(t, ctx, http.MethodGet, e.URL, bob, anonSID, ""); resp.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("bob's event stream on an anonymous session: %d, want 405", resp.StatusCode)
			}
			for who, token := range map[string]string{"bob": bob, "no credential": ""} {
				if resp := rawMCP(t, ctx, http.MethodPost, e.URL, token, anonSID, ping); resp.StatusCode != http.StatusOK {
					t.Errorf("%s's ping on an anonymous session: %d, want 200", who, resp.StatusCode)
				}
			}
			// A session id ctalk never issued is unknown to everyone: 404,
			// and the client starts a new session.
			nonce, _, _ := strings.Cut(strings.TrimPrefix(sid, "mcp-session-"), ".")
			for _, made := range []string{"mcp-session-made-up", "mcp-session-" + nonce, "mcp-session-" + nonce + ".00112233445566778899aabbccddeeff", sid + "0", "not-a-session"} {
				for who, token := range map[string]string{"alice": alice, "no credential": ""} {
					for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
						body := ""
						if m == http.MethodPost {
							body = ping
						}
						if resp := rawMCP(t, ctx, m, e.URL, token, made, body); resp.StatusCode != http.StatusNotFound {
							t.Errorf("%s %s on the session id %q ctalk never issued: %d, want 404", who, m, made, resp.StatusCode)
						}
					}
				}
			}
			// Nothing above ended alice's session or its stream.
			post()
			if uri := nextUpdate(t, updates); uri != "ctalk://channels/dev" {
				t.Fatalf("notification for %s", uri)
			}
		})
	}
}
