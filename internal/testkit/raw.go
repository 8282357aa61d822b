package testkit

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk"
)

// InitializeBody is an initialize request of the session era.
const InitializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + EraSessions + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// RawMCP sends one request to /mcp of the session era, on session sid, as
// the holder of token ("" for none); the body is closed with the test.
func RawMCP(t *testing.T, ctx context.Context, method, base, token, sid, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	return send(t, req, token, sid)
}

// OpenStream opens GET /mcp as the holder of token, for session sid; the
// body is closed with the test.
func OpenStream(t *testing.T, ctx context.Context, base, token, sid string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	return send(t, req, token, sid)
}

// send sends req in the session era, on session sid when it is not empty,
// with token as a bearer header when it is not empty, else opted in to
// anonymous set-up (see Bearer).
func send(t *testing.T, req *http.Request, token, sid string) *http.Response {
	t.Helper()
	req.Header.Set("MCP-Protocol-Version", EraSessions)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	} else {
		req.Header.Set(ctalk.SetupHeader, "1")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// InitSession initializes a session of the session era by hand, as the
// holder of token ("" for none), and returns its Mcp-Session-Id.
func InitSession(t *testing.T, base, token string) string {
	t.Helper()
	resp := RawMCP(t, t.Context(), http.MethodPost, base, token, "", InitializeBody)
	io.Copy(io.Discard, resp.Body)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, sid)
	}
	return sid
}

// PostForm posts form to u and returns the status and body.
func PostForm(t *testing.T, u string, form url.Values) (int, string) {
	t.Helper()
	resp, err := http.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Subscriber opens an official-SDK session of the session era, with its
// standalone event stream, that reports each notifications/resources/updated
// on the returned channel.
func Subscriber(t *testing.T, base, token string) (*mcp.ClientSession, <-chan string) {
	t.Helper()
	return SubscriberIn(t, base, token, EraSessions)
}

// SubscriberIn is Subscriber in era; in the stateless era each Subscribe
// opens a subscriptions/listen stream.
func SubscriberIn(t *testing.T, base, token, era string) (*mcp.ClientSession, <-chan string) {
	t.Helper()
	updates := make(chan string, 100)
	c := mcp.NewClient(&mcp.Implementation{Name: "subscriber", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updates <- req.Params.URI
		},
	})
	tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: Bearer(token)}, MaxRetries: -1}
	cs, err := c.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, updates
}

// NextUpdate is the next resource update, failing the test after 20 s.
func NextUpdate(t *testing.T, updates <-chan string) string {
	t.Helper()
	select {
	case uri := <-updates:
		return uri
	case <-time.After(20 * time.Second):
		t.Fatal("no notifications/resources/updated")
		return ""
	}
}

// Attached posts until a first notification arrives, which says the
// client's event stream (opened in the background after initialize) is
// attached: what is posted before that reaches no stream.
func Attached(t *testing.T, updates <-chan string, post func()) string {
	t.Helper()
	for range 20 {
		post()
		select {
		case uri := <-updates:
			return uri
		case <-time.After(time.Second):
		}
	}
	t.Fatal("no notifications/resources/updated after 20 posts")
	return ""
}

// Drained reads the notifications already queued.
func Drained(updates <-chan string) []string {
	var out []string
	for {
		select {
		case uri := <-updates:
			out = append(out, uri)
		default:
			return out
		}
	}
}

// Refused requires a tool call on a session whose token stopped working to
// fail at the HTTP layer with 401, on this very call.
func Refused(t *testing.T, cs *mcp.ClientSession, tool string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool})
	if err == nil {
		t.Fatalf("%s with a dead token succeeded: %s", tool, Text(res))
	}
	if !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("%s with a dead token: %v; want HTTP 401 Unauthorized", tool, err)
	}
}

// Field is key of v, when v is a JSON object.
func Field(v any, key string) any {
	m, _ := v.(map[string]any)
	return m[key]
}

// List is the list under key of m, or nil.
func List(m map[string]any, key string) []any {
	l, _ := m[key].([]any)
	return l
}
