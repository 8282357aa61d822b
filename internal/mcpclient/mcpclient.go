// Package mcpclient is the one MCP client of ctalk's own programs: the
// stdio bridge (cmd/ctalk), the load harness (cmd/ctalk-bench) and, through
// internal/testkit, the tests. It opens official-SDK sessions to a ctalk
// server's /mcp in either protocol era, sends a bearer token, calls tools
// and reads their results, reads /metrics, polls for state a server reports
// and runs a server in a child process. It imports no test code, so a
// shipped binary may use it.
package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk"
)

// The two protocol eras current MCP clients speak: with sessions, and
// stateless.
const (
	EraSessions  = "2025-11-25"
	EraStateless = "2026-07-28"
)

// Transport adds a bearer token, or the opt-in to anonymous set-up, and
// fixed headers to every request and reports each response's status.
type Transport struct {
	// Token is sent as "Authorization: Bearer Token" when it is not empty.
	Token string
	// Setup, with no Token, opts in to the server's anonymous account
	// set-up (ctalk.SetupHeader): without it a connection made with no
	// credential is refused with 401.
	Setup bool
	// Header is set on every request.
	Header map[string]string
	// Next sends the request; nil means http.DefaultTransport.
	Next http.RoundTripper
	// Status, when set, is called with the status of every response.
	Status func(code int)
}

// RoundTrip sends r with the transport's headers.
func (tr Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if tr.Token != "" || tr.Setup || len(tr.Header) > 0 {
		r = r.Clone(r.Context())
		for k, v := range tr.Header {
			r.Header.Set(k, v)
		}
		switch {
		case tr.Token != "":
			r.Header.Set("Authorization", "Bearer "+tr.Token)
		case tr.Setup:
			r.Header.Set(ctalk.SetupHeader, "1")
		}
	}
	next := tr.Next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(r)
	if err == nil && tr.Status != nil {
		tr.Status(resp.StatusCode)
	}
	return resp, err
}

// Bearer is a transport that sends token as a bearer header; with no token
// it opts in to anonymous account set-up instead, as an agent that
// registers an organization or logs in with a password connects.
func Bearer(token string) Transport { return Transport{Token: token, Setup: token == ""} }

// Options are what a session is opened with besides its endpoint.
type Options struct {
	// Client is the SDK client the session belongs to; nil means one
	// named ctalk-client with no handlers.
	Client *mcp.Client
	// HTTP sends every request; nil means http.DefaultClient.
	HTTP *http.Client
	// Era is the protocol version offered; empty takes the SDK's newest,
	// falling back to what the server supports, and is not checked.
	Era string
}

// Open opens an official-SDK session to endpoint (a server's /mcp
// address). The session does not retry and opens no standalone SSE stream:
// ctalk resumes no broken stream, so retrying only delays the error, and
// ctalk sends nothing unasked that these programs need, so the stream would
// hold a connection for nothing. The negotiated version must be opts.Era
// when one is given.
func Open(ctx context.Context, endpoint string, opts Options) (*mcp.ClientSession, error) {
	c := opts.Client
	if c == nil {
		c = mcp.NewClient(&mcp.Implementation{Name: "ctalk-client", Version: "1"}, nil)
	}
	tr := &mcp.StreamableClientTransport{
		Endpoint:             endpoint,
		HTTPClient:           opts.HTTP,
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: opts.Era})
	if err != nil {
		return nil, err
	}
	if got := cs.InitializeResult().ProtocolVersion; opts.Era != "" && got != opts.Era {
		cs.Close()
		return nil, fmt.Errorf("the server negotiated protocol %s, not %s", got, opts.Era)
	}
	return cs, nil
}

// Dial opens a session to base/mcp in era, sending every request through
// rt, within 30 s. An empty era takes the SDK's default and is not checked.
func Dial(ctx context.Context, base, era string, rt http.RoundTripper) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := Open(ctx, base+"/mcp", Options{
		Client: mcp.NewClient(&mcp.Implementation{Name: "ctalk-test", Version: "1"}, nil),
		HTTP:   &http.Client{Transport: rt},
		Era:    era,
	})
	if err != nil {
		return nil, fmt.Errorf("connect to %s/mcp (%s): %w", base, era, err)
	}
	return cs, nil
}

// ToolError is a tool result with isError set.
type ToolError struct{ Tool, Text string }

func (e *ToolError) Error() string { return e.Tool + ": " + e.Text }

// CallTool calls a tool and returns its structured result, or the error:
// a *ToolError for a tool error.
func CallTool(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (map[string]any, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, &ToolError{tool, Text(res)}
	}
	return Structured(tool, res)
}

// Text joins a result's text content.
func Text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Structured returns a result's structured content as an object.
func Structured(tool string, res *mcp.CallToolResult) (map[string]any, error) {
	if m, ok := res.StructuredContent.(map[string]any); ok {
		return m, nil
	}
	b, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s: structured content %s is not an object", tool, b)
	}
	return m, nil
}
