package tools_test

import (
	"context"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/mcpclient"
)

// signingIn is a transport whose bearer token a test sets mid-session, as
// an agent that signs in with the login tool and then sends its token in
// the Authorization header does; until then it opts in to anonymous set-up.
type signingIn struct{ token atomic.Pointer[string] }

func (s *signingIn) RoundTrip(r *http.Request) (*http.Response, error) {
	var tok string
	if p := s.token.Load(); p != nil {
		tok = *p
	}
	return mcpclient.Bearer(tok).RoundTrip(r)
}

// listChangedSession opens a session of the 2025-11-25 protocol through rt
// whose client counts the notifications/tools/list_changed it hears.
func listChangedSession(t *testing.T, base string, rt http.RoundTripper) (*mcp.ClientSession, <-chan struct{}) {
	t.Helper()
	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "ctalk-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := mcpclient.Open(t.Context(), base+"/mcp", mcpclient.Options{Client: client, HTTP: &http.Client{Transport: rt}, Era: eraSessions})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, changed
}

// heard says whether changed gets a notification within d.
func heard(changed <-chan struct{}, d time.Duration) bool {
	select {
	case <-changed:
		return true
	case <-time.After(d):
		return false
	}
}

// heardWithin calls request, the client's next request, until changed gets
// a notification, as often as the server repeats it (it does until the
// client lists the tools: mcp-go v1.2.1 can drop a notification that
// meets its request's answer).
func heardWithin(changed <-chan struct{}, request func()) bool {
	for range 3 {
		request()
		if heard(changed, 3*time.Second) {
			return true
		}
	}
	return false
}

// TestToolListChangesWithCaller: a session initialized without a
// credential is offered the account set-up tools; once its agent signs in
// and sends its token, its calls bring notifications/tools/list_changed
// until it lists the tools, and the list it then reads is sized to the
// member. A session bound
// to a credential from the start hears none.
func TestToolListChangesWithCaller(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			e := start(t, engine)
			e.Org(t, eraSessions, "acme")
			rt := &signingIn{}
			cs, changed := listChangedSession(t, e.URL, rt)
			before, _ := listed(t, cs)
			if !slices.Contains(before, "login") {
				t.Fatalf("a session without a credential is not offered login: %v", before)
			}
			tok := e.Login(t, cs, "acme", "bob")
			if heard(changed, 200*time.Millisecond) {
				t.Fatal("the list changed before the caller did")
			}
			rt.token.Store(&tok)
			if !heardWithin(changed, func() { ok(t, cs, "whoami", nil) }) {
				t.Fatal("no notifications/tools/list_changed after the caller signed in")
			}
			after, _ := listed(t, cs)
			if slices.Contains(after, "login") || slices.Contains(after, "remove_user") || !slices.Contains(after, "ask_person") {
				t.Errorf("the list after signing in is not a member's: %v", after)
			}
			ok(t, cs, "whoami", nil)
			if heard(changed, 300*time.Millisecond) {
				t.Error("the list changed again with the same caller")
			}

			bound, boundChanged := listChangedSession(t, e.URL, mcpclient.Transport{Token: tok})
			listed(t, bound)
			ok(t, bound, "whoami", nil)
			if heard(boundChanged, 300*time.Millisecond) {
				t.Error("a session bound to its credential heard the list change")
			}
		})
	}
}

// TestToolListChangesWithMCPGo: mcp-go's client of the 2025-11-25 protocol
// hears notifications/tools/list_changed once the caller on its session
// signs in.
func TestToolListChangesWithMCPGo(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			e := start(t, engine)
			e.Org(t, eraSessions, "acme")
			var token atomic.Pointer[string]
			changed := make(chan struct{}, 8)
			c, res := mcpgoSession(t, e.URL, eraSessions, func(n mcpgo.JSONRPCNotification) {
				if n.Method == mcpgo.MethodNotificationToolsListChanged {
					changed <- struct{}{}
				}
			}, transport.WithHTTPHeaderFunc(func(context.Context) map[string]string {
				if p := token.Load(); p != nil {
					return map[string]string{"Authorization": "Bearer " + *p}
				}
				return map[string]string{ctalk.SetupHeader: "1"}
			}))
			ctx := t.Context()
			if res.Capabilities.Tools == nil || !res.Capabilities.Tools.ListChanged {
				t.Fatalf("tools capability = %+v, want listChanged", res.Capabilities.Tools)
			}
			tok := e.Login(t, e.Connect(t, eraSessions, ""), "acme", "bob")
			token.Store(&tok)
			call := mcpgo.CallToolRequest{}
			call.Params.Name = "whoami"
			whoami := func() {
				if r, err := c.CallTool(ctx, call); err != nil || r.IsError {
					t.Fatalf("whoami: %v %+v", err, r)
				}
			}
			if !heardWithin(changed, whoami) {
				t.Fatal("mcp-go's client heard no notifications/tools/list_changed after the caller signed in")
			}
		})
	}
}
