package tools_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

func TestChannelSubscriptions(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine)
			u := e.Org(t, eraSessions, "acme")
			ok(t, u["alice"], "create_channel", map[string]any{"channel": "dev", "members": []string{"bob"}})
			ok(t, u["carol"], "create_channel", map[string]any{"channel": "secret", "private": true})
			other := e.Org(t, eraSessions, "other")
			ok(t, other["alice"], "create_channel", map[string]any{"channel": "dev"})

			token := e.Login(t, e.Connect(t, eraSessions, ""), "acme", "alice")
			cs, updates := subscriber(t, e.URL, token)
			for _, uri := range []string{"ctalk://channels/secret", "ctalk://channels/dev", "ctalk://elsewhere/x"} {
				if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
					t.Fatalf("subscribe %s: %v", uri, err)
				}
			}
			// Only the channel alice is in is followed: carol's private
			// channel and the other org's dev never notify her.
			onlyDevUpdates(t, u["bob"], updates, func() {
				ok(t, u["carol"], "post_message", map[string]any{"channel": "secret", "text": "not for alice"})
				ok(t, other["alice"], "post_message", map[string]any{"channel": "dev", "text": "not for acme"})
			})
			if n := countRows(t, e.DB, `SELECT COUNT(*) FROM channel_subscriptions`); n != 1 {
				t.Fatalf("%d subscriptions stored, want 1", n)
			}
			// Leaving the channel ends the subscription with the membership.
			ok(t, u["alice"], "leave_channel", map[string]any{"channel": "dev"})
			if n := countRows(t, e.DB, `SELECT COUNT(*) FROM channel_subscriptions`); n != 0 {
				t.Fatalf("%d subscriptions left after leaving", n)
			}
		})
	}
}

// onlyDevUpdates requires updates, which follows alice's subscriptions, to
// bring dev once bob posts there, and nothing else after the posts of
// elsewhere, which alice may not follow.
func onlyDevUpdates(t *testing.T, bob *mcp.ClientSession, updates <-chan string, elsewhere func()) {
	t.Helper()
	if uri := attached(t, updates, func() {
		ok(t, bob, "post_message", map[string]any{"channel": "dev", "text": "are you there?"})
	}); uri != "ctalk://channels/dev" {
		t.Fatalf("notification for %s, want ctalk://channels/dev", uri)
	}
	elsewhere()
	ok(t, bob, "post_message", map[string]any{"channel": "dev", "text": "for alice"})
	if uri := nextUpdate(t, updates); uri != "ctalk://channels/dev" {
		t.Fatalf("notification for %s, want ctalk://channels/dev", uri)
	}
	for _, uri := range drained(updates) {
		if uri != "ctalk://channels/dev" {
			t.Fatalf("notification for %s, want only ctalk://channels/dev", uri)
		}
	}
}

// TestChannelSubscriptionsAcrossReplicas: behind a balancer without
// stickiness, the subscribe request, the event stream and the post each
// reach either of two servers; the notification still arrives.
func TestChannelSubscriptionsAcrossReplicas(t *testing.T) {
	t.Parallel()
	public := func(c *api.Config) { c.PublicURL = "https://ctalk.example.com" }
	one := start(t, db.Postgres, options{API: public})
	two := start(t, db.Postgres, options{SharedWith: one, API: public})
	lb, _ := roundRobin(t, one, two)
	e := &env{URL: lb.URL, DB: one.DB}
	u := e.Org(t, eraSessions, "acme")
	ok(t, u["alice"], "create_channel", map[string]any{"channel": "dev", "members": []string{"bob"}})
	token := e.Login(t, e.Connect(t, eraSessions, ""), "acme", "alice")
	cs, updates := subscriber(t, lb.URL, token)
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "ctalk://channels/dev"}); err != nil {
		t.Fatal(err)
	}
	attached(t, updates, func() { ok(t, u["bob"], "post_message", map[string]any{"channel": "dev", "text": "are you there?"}) })
	for i := range 4 {
		drained(updates)
		ok(t, u["bob"], "post_message", map[string]any{"channel": "dev", "text": "post " + string(rune('a'+i))})
		if uri := nextUpdate(t, updates); uri != "ctalk://channels/dev" {
			t.Fatalf("notification for %s", uri)
		}
	}
}

// TestEventStreamLimits: GET /mcp is served only to a signed-in session, at
// most four streams per user, and ends when the server drains.
func TestEventStreamLimits(t *testing.T) {
	t.Parallel()
	e := start(t, db.SQLite)
	e.Org(t, eraSessions, "acme")
	token := e.Login(t, e.Connect(t, eraSessions, ""), "acme", "alice")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if resp := openStream(t, ctx, e.URL, "", initSession(t, e.URL, "")); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("anonymous GET /mcp: %d, want 405", resp.StatusCode)
	}
	if resp := openStream(t, ctx, e.URL, token, ""); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /mcp without a session: %d, want 405", resp.StatusCode)
	}
	var open []*http.Response
	for i := range 4 {
		resp := openStream(t, ctx, e.URL, token, initSession(t, e.URL, token))
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("stream %d: %d %s", i, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		open = append(open, resp)
	}
	resp := openStream(t, ctx, e.URL, token, initSession(t, e.URL, token))
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(string(b), "the most one user may") {
		t.Fatalf("a fifth stream: %d %s, want 405", resp.StatusCode, b)
	}
	e.App.Drain()
	for i, s := range open {
		done := make(chan error, 1)
		go func() { _, err := io.Copy(io.Discard, s.Body); done <- err }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("stream %d still open after the server drained", i)
		}
	}
}

// TestListenEstablishesNoResourceSubscriptions: a 2026-07-28 client's
// subscriptions/listen for channel updates without a credential is
// acknowledged with none established and ends at once, instead of holding
// a stream that would never carry one (TestListenDeliversChannelUpdates has
// a signed-in one).
func TestListenEstablishesNoResourceSubscriptions(t *testing.T) {
	t.Parallel()
	e := start(t, db.SQLite)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": map[string]any{
		"notifications": map[string]any{"resourceSubscriptions": []string{"ctalk://channels/dev"}},
		"_meta": map[string]any{
			mcpgo.MetaKeyProtocolVersion:    eraStateless,
			mcpgo.MetaKeyClientInfo:         map[string]any{"name": "listen", "version": "1"},
			mcpgo.MetaKeyClientCapabilities: map[string]any{},
		},
	}})
	body := string(b)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// Opted in to anonymous set-up: without it the listen is refused with
	// the sign-in challenge.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+"/mcp?setup=1", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", eraStateless)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the listen stream did not end: %v (%s)", err, b)
	}
	// The stream ended with the request's result and established no
	// resource subscription. mcp-go's acknowledgement that precedes the
	// result is sent from another goroutine and is at times not written
	// before the stream ends; when it is, it lists no subscriptions.
	if !strings.Contains(string(b), `"id":7,"result"`) || strings.Contains(string(b), "resourceSubscriptions") {
		t.Fatalf("subscriptions/listen: %d %s", resp.StatusCode, b)
	}
}
