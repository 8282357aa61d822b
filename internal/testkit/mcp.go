package testkit

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/internal/mcpclient"
)

// Dial opens an official-SDK client session to base/mcp in era, sending
// every request through rt; see mcpclient.Dial.
func Dial(ctx context.Context, base, era string, rt http.RoundTripper) (*mcp.ClientSession, error) {
	return mcpclient.Dial(ctx, base, era, rt)
}

// Connect opens a session to base/mcp in era as the holder of token (none
// when empty), closed at the end of the test.
func Connect(t testing.TB, base, era, token string) *mcp.ClientSession {
	t.Helper()
	return ConnectWith(t, base, era, Bearer(token))
}

// ConnectWith is Connect through the transport rt.
func ConnectWith(t testing.TB, base, era string, rt http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	cs, err := Dial(context.Background(), base, era, rt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// Call calls a tool and returns its result; a protocol error fails the test.
func Call(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	return res
}

// OK calls a tool that must succeed and returns its structured result,
// which must be an object whose JSON copy is the text content.
func OK(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	res := Call(t, cs, tool, args)
	if res.IsError {
		t.Fatalf("%s: tool error: %s", tool, Text(res))
	}
	m, err := Structured(tool, res)
	if err != nil {
		t.Fatal(err)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(Text(res)), &fromText); err != nil {
		t.Fatalf("%s: text content is not the JSON copy of the result: %v", tool, err)
	}
	if !reflect.DeepEqual(fromText, m) {
		t.Fatalf("%s: text content %s is not the JSON copy of the structured result %s", tool, Text(res), MustJSON(m))
	}
	return m
}

// Fail calls a tool that must fail with a tool error whose text contains
// want, and returns the text.
func Fail(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any, want string) string {
	t.Helper()
	res := Call(t, cs, tool, args)
	got := Text(res)
	if !res.IsError {
		t.Fatalf("%s: succeeded with %s; want an error containing %q", tool, got, want)
	}
	if !strings.Contains(got, want) {
		t.Fatalf("%s: error %q does not contain %q", tool, got, want)
	}
	return got
}

// Text joins a result's text content.
func Text(res *mcp.CallToolResult) string { return mcpclient.Text(res) }

// Structured returns a result's structured content as an object.
func Structured(tool string, res *mcp.CallToolResult) (map[string]any, error) {
	return mcpclient.Structured(tool, res)
}

// ToolError is a tool result with isError set.
type ToolError = mcpclient.ToolError

// CallTool calls a tool and returns its structured result, or the error:
// a *ToolError for a tool error; see mcpclient.CallTool.
func CallTool(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (map[string]any, error) {
	return mcpclient.CallTool(ctx, cs, tool, args)
}

// MustJSON is v as JSON.
func MustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
