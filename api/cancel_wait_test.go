package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// keepOpen is a client transport whose waiting calls' HTTP requests
// outlive the call: when the call is cancelled the client stops waiting for
// the response and sends notifications/cancelled, but leaves the request
// open, as the official TypeScript SDK does, so that only the notice tells
// the server.
type keepOpen struct{ next http.RoundTripper }

func (k keepOpen) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Method != http.MethodPost {
		return k.next.RoundTrip(r)
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	r = r.Clone(context.WithoutCancel(ctx))
	r.Body = io.NopCloser(bytes.NewReader(b))
	if !bytes.Contains(b, []byte(`"wait_for_`)) {
		return k.next.RoundTrip(r.WithContext(ctx))
	}
	type sent struct {
		resp *http.Response
		err  error
	}
	done := make(chan sent, 1)
	go func() {
		resp, err := k.next.RoundTrip(r)
		done <- sent{resp, err}
	}()
	select {
	case s := <-done:
		return s.resp, s.err
	case <-ctx.Done():
		// The request stays open; the server learns of the cancel only
		// from the notice. Its response, when it comes, is dropped.
		go func() {
			if s := <-done; s.err == nil {
				io.Copy(io.Discard, s.resp.Body)
				s.resp.Body.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// TestCancelledWaitHandsOverNothing: a waiting call its client cancelled,
// by notifications/cancelled with the request left open or by hanging up,
// ends at once and claims nothing: what arrives next goes to the next call.
// For wait_for_reply and wait_for_inbox (parked before mcp-go) and
// wait_for_message (in the tool), in both eras, on both engines.
func TestCancelledWaitHandsOverNothing(t *testing.T) {
	t.Parallel()
	type arrival func(t *testing.T, alice, bob *mcp.ClientSession) (tool string, args map[string]any, arrive func(), got func(map[string]any) bool)
	waits := map[string]arrival{
		"wait_for_reply": func(t *testing.T, alice, bob *mcp.ClientSession) (string, map[string]any, func(), func(map[string]any) bool) {
			id := ok(t, alice, "ask_person", map[string]any{"to_user_id": "bob", "question": "cancelled?"})["message_id"]
			ok(t, bob, "propose_response", map[string]any{"message_id": id, "draft_text": "no"})
			return "wait_for_reply", map[string]any{"message_id": id, "timeout_s": 60},
				func() { ok(t, bob, "send_response", map[string]any{"message_id": id, "final_text": "no"}) },
				func(m map[string]any) bool { return len(list(m, "replies")) == 1 }
		},
		"wait_for_inbox": func(t *testing.T, alice, bob *mcp.ClientSession) (string, map[string]any, func(), func(map[string]any) bool) {
			return "wait_for_inbox", map[string]any{"timeout_s": 60},
				func() { ok(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": "still there?"}) },
				func(m map[string]any) bool { return len(list(m, "questions")) == 1 }
		},
		"wait_for_message": func(t *testing.T, alice, bob *mcp.ClientSession) (string, map[string]any, func(), func(map[string]any) bool) {
			ok(t, alice, "create_channel", map[string]any{"channel": "dev", "members": []string{"bob"}})
			return "wait_for_message", map[string]any{"channel": "dev", "timeout_s": 60},
				func() { ok(t, bob, "post_message", map[string]any{"channel": "dev", "text": "still there?"}) },
				func(m map[string]any) bool { return len(list(m, "messages")) == 1 }
		},
	}
	for _, engine := range dbtest.Engines {
		for _, era := range eras {
			for how, open := range map[string]bool{"cancel notice": true, "hang up": false} {
				for name, setup := range waits {
					t.Run(string(engine)+"/"+era+"/"+how+"/"+name, func(t *testing.T) {
						e := start(t, engine)
						tok := e.Tokens(t, era, "acme")
						var rt http.RoundTripper = testkit.Bearer(tok["alice"])
						if open {
							rt = keepOpen{rt}
						}
						alice := testkit.ConnectWith(t, e.URL, era, rt)
						bob := e.Connect(t, era, tok["bob"])
						tool, args, arrive, got := setup(t, alice, bob)

						ctx, cancel := context.WithCancel(dbtest.Operator())
						done := make(chan error, 1)
						go func() {
							_, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
							done <- err
						}()
						waitForWaiters(t, e, 1)
						cancel()
						if err := <-done; err == nil {
							t.Fatal("a cancelled call returned no error")
						}
						// The cancelled call stops waiting, before anything arrives.
						waitForWaiters(t, e, 0)
						arrive()
						args["timeout_s"] = 10
						if m := ok(t, alice, tool, args); !got(m) {
							t.Fatalf("%s after the cancelled one = %v; want what arrived", tool, m)
						}
					})
				}
			}
		}
	}
}
