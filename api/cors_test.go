package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
)

// TestBrowserClientsReachMCP: a browser-based MCP client on an allowed
// origin (MCP Inspector runs on localhost) gets its preflight answered and
// can read WWW-Authenticate, from which it starts the OAuth sign-in; a page
// on another origin is refused before any of that.
func TestBrowserClientsReachMCP(t *testing.T) {
	t.Parallel()
	e := start(t, db.SQLite, options{})
	const inspector = "http://localhost:6274"

	req, _ := http.NewRequest(http.MethodOptions, e.URL+"/mcp", nil)
	req.Header.Set("Origin", inspector)
	req.Header.Set("Access-Control-Request-Method", http.MethodPost)
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-protocol-version")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != inspector ||
		!strings.Contains(strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")), "authorization") {
		t.Errorf("preflight: %d, headers %v", resp.StatusCode, resp.Header)
	}

	req, _ = http.NewRequest(http.MethodPost, e.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`))
	req.Header.Set("Origin", inspector)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", eraStateless)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate") ||
		resp.Header.Get("Access-Control-Allow-Origin") != inspector {
		t.Errorf("anonymous call from the browser: %d, headers %v; want 401 with WWW-Authenticate readable by the page", resp.StatusCode, resp.Header)
	}

	req, _ = http.NewRequest(http.MethodOptions, e.URL+"/mcp", nil)
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Access-Control-Request-Method", http.MethodPost)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin: %d, Access-Control-Allow-Origin %q; want 403 and none", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}
