package tools_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk/db/dbtest"
)

// statelessPost sends one request of the 2026-07-28 protocol to base/mcp,
// with the headers and _meta such a client sends; the response's body is
// closed with the test.
func statelessPost(t *testing.T, ctx context.Context, base, token, method, name string, params map[string]any) *http.Response {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		mcpgo.MetaKeyProtocolVersion:    eraStateless,
		mcpgo.MetaKeyClientInfo:         map[string]any{"name": "ctalk-test", "version": "1"},
		mcpgo.MetaKeyClientCapabilities: map[string]any{},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcpgo.HeaderProtocolVersion, eraStateless)
	req.Header.Set(mcpgo.HeaderMethod, method)
	if name != "" {
		req.Header.Set(mcpgo.HeaderName, name)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// stateless sends one request of the 2026-07-28 protocol (see
// statelessPost) and returns its result.
func stateless(t *testing.T, base, token, method, name string, params map[string]any) map[string]any {
	t.Helper()
	resp := statelessPost(t, t.Context(), base, token, method, name, params)
	// The answer is a JSON body, or the last data line of an event stream.
	var raw string
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<22)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				raw = d
			}
		}
	} else {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	var msg struct {
		Result map[string]any
		Error  any
	}
	if err := json.Unmarshal([]byte(raw), &msg); err != nil || msg.Result == nil {
		t.Fatalf("%s: %d %v %s", method, resp.StatusCode, msg.Error, raw)
	}
	return msg.Result
}

// TestStatelessResults: every result a 2026-07-28 client gets names the
// server in _meta; list and read results carry ttlMs and cacheScope, what
// depends on the caller private to them; lists come in one order, by name,
// request after request.
func TestStatelessResults(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			e := start(t, engine)
			bob := e.Tokens(t, eraStateless, "acme")["bob"]
			ok(t, e.Connect(t, eraStateless, bob), "create_channel", map[string]any{"channel": "zeta"})
			ok(t, e.Connect(t, eraStateless, bob), "create_channel", map[string]any{"channel": "alpha"})
			for _, c := range []struct {
				method, name string
				params       map[string]any
				ttl          float64
				scope        string
			}{
				{"tools/list", "", nil, 300000, "private"},
				{"resources/list", "", nil, 0, "private"},
				{"resources/templates/list", "", nil, 3600000, "public"},
				{"resources/read", "ctalk://channels/alpha", map[string]any{"uri": "ctalk://channels/alpha"}, 0, "private"},
				{"server/discover", "", nil, 3600000, "public"},
				{"tools/call", "whoami", map[string]any{"name": "whoami", "arguments": map[string]any{}}, -1, ""},
			} {
				res := stateless(t, e.URL, bob, c.method, c.name, c.params)
				info, _ := field(res["_meta"], "io.modelcontextprotocol/serverInfo").(map[string]any)
				if info["name"] != "ctalk" || info["version"] == nil || info["title"] != "ctalk" {
					t.Errorf("%s: _meta names the server %v", c.method, res["_meta"])
				}
				if c.ttl < 0 {
					continue
				}
				if res["ttlMs"] != c.ttl || res["cacheScope"] != c.scope {
					t.Errorf("%s: ttlMs %v, cacheScope %v; want %v, %s", c.method, res["ttlMs"], res["cacheScope"], c.ttl, c.scope)
				}
			}
			names := func(method, key, by string) []string {
				var out []string
				for _, it := range list(stateless(t, e.URL, bob, method, "", nil), key) {
					out = append(out, field(it, by).(string))
				}
				return out
			}
			tools := names("tools/list", "tools", "name")
			if !slices.IsSorted(tools) || len(tools) < 10 {
				t.Errorf("tools/list is not in order of name: %v", tools)
			}
			if again := names("tools/list", "tools", "name"); !slices.Equal(tools, again) {
				t.Errorf("tools/list changed order between requests:\n%v\n%v", tools, again)
			}
			if chans := names("resources/list", "resources", "uri"); !slices.Equal(chans, []string{"ctalk://channels/alpha", "ctalk://channels/zeta"}) {
				t.Errorf("resources/list = %v, want the caller's channels by name", chans)
			}
		})
	}
}
