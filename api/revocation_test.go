package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
)

// held is everything a member can hold open with one token: a REST event
// stream, a REST long-poll, wait_for_message in the tool, wait_for_inbox and
// wait_for_reply parked before mcp-go, and, in the session era, the
// session's event stream (GET /mcp) carrying a resource subscription.
type held struct {
	stream   *sse
	poll     chan string
	waits    map[string]chan string
	mcpEnded chan string
}

// hold opens everything of held as the holder of token on srv, in era, on
// channel dev (whose last seq is after), and returns once all of it waits.
func hold(t *testing.T, srv *env, era, token string, after int) *held {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	h := &held{poll: make(chan string, 1), waits: map[string]chan string{}}
	before := srv.Broker.Waiting()
	h.stream = streamEvents(t, srv, token, "dev", "")
	go func() {
		code, m := srv.REST(t, token, "GET", fmt.Sprintf("/api/v1/wait?channel=dev&after=%d&timeout_s=60", after), "")
		h.poll <- fmt.Sprint(code, " ", m)
	}()
	cs := srv.Connect(t, era, token)
	for tool, args := range map[string]map[string]any{
		"wait_for_message": {"channel": "dev", "after": after, "timeout_s": 60},
		"wait_for_inbox":   {"timeout_s": 60},
		"wait_for_reply":   {"timeout_s": 60},
	} {
		got := make(chan string, 1)
		h.waits[tool] = got
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				got <- "error " + err.Error()
				return
			}
			got <- fmt.Sprintf("isError=%v %s", res.IsError, testkit.Text(res))
		}()
	}
	if era == eraSessions {
		sub, _ := subscriber(t, srv.URL, token)
		if err := sub.Subscribe(ctx, &mcp.SubscribeParams{URI: "ctalk://channels/dev"}); err != nil {
			t.Fatal(err)
		}
		resp := openStream(t, ctx, srv.URL, token, sub.ID())
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /mcp: %d", resp.StatusCode)
		}
		h.mcpEnded = make(chan string, 1)
		go func() {
			b, _ := io.ReadAll(resp.Body)
			h.mcpEnded <- string(b)
		}()
	}
	// The REST stream, the long-poll and the three tool calls.
	waitForWaiters(t, srv, before+5)
	return h
}

// ended checks that everything h held ended, refused, and carried nothing
// posted or asked after the revocation.
func (h *held) ended(t *testing.T) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	stream := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(h.stream.r)
		stream <- string(b)
	}()
	select {
	case s := <-stream:
		if strings.Contains(s, "event: message") || !strings.Contains(s, "event: error") {
			t.Errorf("REST event stream after the revocation: %q; want only its error event", s)
		}
	case <-timeout:
		t.Fatal("the REST event stream did not end")
	}
	select {
	case got := <-h.poll:
		if !strings.HasPrefix(got, "401 ") && !strings.HasPrefix(got, "403 ") || strings.Contains(got, "after the revocation") {
			t.Errorf("REST long-poll after the revocation: %s; want 401 or 403", got)
		}
	case <-timeout:
		t.Fatal("the REST long-poll did not end")
	}
	for tool, got := range h.waits {
		select {
		case got := <-got:
			if strings.Contains(got, "after the revocation") || !strings.Contains(got, "nauthorized") && !strings.Contains(got, "forbidden") {
				t.Errorf("%s after the revocation: %s; want it refused", tool, got)
			}
		case <-timeout:
			t.Fatalf("%s did not end", tool)
		}
	}
	if h.mcpEnded != nil {
		select {
		case got := <-h.mcpEnded:
			if strings.Contains(got, "resources/updated") {
				t.Errorf("GET /mcp after the revocation carried %q", got)
			}
		case <-timeout:
			t.Fatal("the session's event stream (GET /mcp) did not end")
		}
	}
}

// afterRevocation posts to dev and asks and answers bob, which nothing
// bob held may carry.
func afterRevocation(t *testing.T, alice, bobAsks *mcp.ClientSession) {
	t.Helper()
	ok(t, alice, "post_message", map[string]any{"channel": "dev", "text": "after the revocation"})
	// Refused once bob is removed; asked otherwise.
	call(t, alice, "ask_person", map[string]any{"to_user_id": "bob", "question": "after the revocation?"})
	if bobAsks == nil {
		return
	}
	id := ok(t, bobAsks, "ask_person", map[string]any{"to_user_id": "alice", "question": "answered after the revocation?"})["message_id"]
	ok(t, alice, "propose_response", map[string]any{"message_id": id, "draft_text": "after the revocation"})
	ok(t, alice, "send_response", map[string]any{"message_id": id, "final_text": "after the revocation"})
}

// TestRevocationEndsWhatIsOpen: every way a credential ends ends
// everything it holds open (held), on the replica that revoked it and on
// another, and nothing posted or asked afterwards reaches it; a logout of
// one token leaves the user's other tokens' streams open.
func TestRevocationEndsWhatIsOpen(t *testing.T) {
	t.Parallel()
	type setup struct {
		name     string
		engine   db.Engine
		replicas int
	}
	setups := []setup{{"sqlite", db.SQLite, 1}, {"postgres", db.Postgres, 1}, {"postgres/two replicas", db.Postgres, 2}}
	revocations := []struct {
		name string
		// revoke ends bob's token that holds things open: bob is a session
		// with that token, third one with another of bob's, alice the
		// admin's; a is the replica, since no tool changes
		// roles or uses a mailed reset link.
		revoke func(t *testing.T, a *env, alice, bob, third *mcp.ClientSession)
		// others reports whether bob's other tokens end too.
		others bool
	}{
		{"logout", func(t *testing.T, _ *env, _, bob, _ *mcp.ClientSession) { ok(t, bob, "logout", nil) }, false},
		{"remove_user", func(t *testing.T, _ *env, alice, _, _ *mcp.ClientSession) {
			ok(t, alice, "remove_user", map[string]any{"org_id": "acme", "user_id": "bob"})
		}, true},
		{"revoke_user_tokens", func(t *testing.T, _ *env, alice, _, _ *mcp.ClientSession) {
			ok(t, alice, "revoke_user_tokens", map[string]any{"org_id": "acme", "user_id": "bob"})
		}, true},
		{"password reset", func(t *testing.T, one *env, _, _, _ *mcp.ClientSession) {
			// An admin resets it in the web app; agents may not.
			if _, err := one.Auth.ResetPassword(dbtest.Operator(), "acme", "bob", "a fresh start for bob"); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"reset by mailed link", func(t *testing.T, a *env, _, _, _ *mcp.ClientSession) {
			ctx := ctalk.WithOrg(dbtest.Operator(), "acme")
			if _, err := a.Orgs.SetEmail(ctx, "acme", "bob", "bob@example.com"); err != nil {
				t.Fatal(err)
			}
			req, err := a.Auth.RequestReset(ctx, "acme", "bob")
			if err != nil || req.Token == "" {
				t.Fatalf("RequestReset: %+v, %v", req, err)
			}
			if _, _, err := a.Auth.UseReset(ctx, req.Token, "a fresh start for bob"); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"role change", func(t *testing.T, a *env, _, _, _ *mcp.ClientSession) {
			if _, err := a.Orgs.SetRole(dbtest.Operator(), "acme", "bob", orgs.RoleAdmin); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"change_password", func(t *testing.T, _ *env, _, _, third *mcp.ClientSession) {
			ok(t, third, "change_password", map[string]any{"current_password": userPW, "new_password": "bob's new password"})
		}, true},
	}
	for _, su := range setups {
		for _, rv := range revocations {
			for _, era := range eras {
				// Every revocation on each setup in the session era; the
				// stateless era, whose calls park alike, with logout.
				if era != eraSessions && rv.name != "logout" {
					continue
				}
				t.Run(su.name+"/"+rv.name+"/"+era, func(t *testing.T) {
					one := start(t, su.engine)
					two := one
					if su.replicas == 2 {
						two = start(t, su.engine, options{SharedWith: one})
					}
					u := one.Org(t, era, "acme")
					ok(t, u["alice"], "create_channel", map[string]any{"channel": "dev", "members": []string{"bob"}})
					anon := one.Connect(t, era, "")
					tok, other := one.Login(t, anon, "acme", "bob"), one.Login(t, anon, "acme", "bob")
					h := hold(t, two, era, tok, 0)
					n := two.Broker.Waiting()
					kept := streamEvents(t, two, other, "dev", "")
					waitForWaiters(t, two, n+1)

					rv.revoke(t, one, u["alice"], one.Connect(t, era, tok), one.Connect(t, era, one.Login(t, anon, "acme", "bob")))
					var bobAsks *mcp.ClientSession
					if !rv.others {
						bobAsks = one.Connect(t, era, other)
					}
					afterRevocation(t, u["alice"], bobAsks)
					h.ended(t)
					if !rv.others {
						if _, data := kept.next(t); data["text"] != "after the revocation" {
							t.Errorf("the other token's stream got %v; want the post", data)
						}
					}
				})
			}
		}
	}
}
