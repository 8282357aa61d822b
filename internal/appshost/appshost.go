// Package appshost is a small chat-client host of MCP Apps (the extension
// io.modelcontextprotocol/ui), for the tests of ctalk's decision card and
// for its screenshot: a page that renders an app's HTML in a sandboxed
// frame and speaks the extension's postMessage protocol with it (the
// initialize handshake with a theme and a host colour, the tool's input
// and result in, the app's tool calls out, proxied to ctalk through a real
// MCP client session, and its open-link requests recorded).
//
// Its frame shares the page's origin (sandbox allow-scripts
// allow-same-origin), which a chat client's host would not do, so that a
// test can read the app's document from the page.
package appshost

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Host serves the host page at its root, and the page's calls out under
// it. Its page offers the app only the tools named in AppTools.
type Host struct {
	cs       *mcp.ClientSession
	html     string
	appTools []string
	mu       sync.Mutex
	links    []string
	result   []byte // the first tool result, as JSON
}

// New returns a host that renders the app of the ui:// resource uri, read
// through cs, with first as its tool result; it proxies the app's calls of
// the tools appTools (and no other) through cs.
//
// Returns the error of reading the resource.
func New(ctx context.Context, cs *mcp.ClientSession, uri string, first *mcp.CallToolResult, appTools ...string) (*Host, error) {
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", uri, err)
	}
	if len(res.Contents) == 0 {
		return nil, fmt.Errorf("read %s: no contents", uri)
	}
	result, err := json.Marshal(first)
	if err != nil {
		return nil, err
	}
	return &Host{cs: cs, html: res.Contents[0].Text, appTools: appTools, result: result}, nil
}

// Opened returns the URLs the app asked the host to open, in order.
func (h *Host) Opened() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.links)
}

// ServeHTTP serves the page at "/" and its calls at "/tools-call" and
// "/ui-open-link", under whatever prefix the host is mounted at.
func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet:
		html, _ := json.Marshal(h.html)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, page, h.result, html)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/tools-call"):
		h.callTool(w, r)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/ui-open-link"):
		var p struct{ URL string }
		json.NewDecoder(r.Body).Decode(&p)
		h.mu.Lock()
		h.links = append(h.links, p.URL)
		h.mu.Unlock()
		fmt.Fprint(w, `{}`)
	default:
		http.NotFound(w, r)
	}
}

// callTool proxies one of the app's tool calls to the server, as a host
// does: only the tools the app may call.
func (h *Host) callTool(w http.ResponseWriter, r *http.Request) {
	var p mcp.CallToolParams
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil || !slices.Contains(h.appTools, p.Name) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"message":"the host lets the app call only its own tools"}`)
		return
	}
	out, err := h.cs.CallTool(r.Context(), &p)
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		json.NewEncoder(w).Encode(map[string]string{"message": err.Error()})
		return
	}
	json.NewEncoder(w).Encode(out)
}

// page is the host's page; its %s are the first result and the app's
// HTML, as JSON. Its script's pushResult(r) shows the app another tool
// result, lightTheme() turns the host light.
const page = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>A chat client's host of MCP Apps</title>
<style>body{margin:0;background:#101010}iframe{border:0;width:100%%;height:100vh;display:block}</style></head><body>
<iframe id="card" title="ctalk card" sandbox="allow-scripts allow-same-origin"></iframe>
<script>
const frame = document.getElementById("card");
const base = location.pathname.replace(/\/$/, "");
const toCard = m => frame.contentWindow.postMessage(Object.assign({jsonrpc: "2.0"}, m), "*");
window.pushResult = r => toCard({method: "ui/notifications/tool-result", params: r});
window.lightTheme = () => toCard({method: "ui/notifications/host-context-changed",
	params: {theme: "light", styles: {variables: {"--color-background-primary": "rgb(250, 250, 250)"}}}});
window.addEventListener("message", async ev => {
	if (ev.source !== frame.contentWindow) return;
	const m = ev.data;
	switch (m.method) {
	case "ui/initialize":
		toCard({id: m.id, result: {protocolVersion: "2026-01-26", hostInfo: {name: "appshost", version: "1"},
			hostCapabilities: {openLinks: {}, serverTools: {}},
			hostContext: {theme: "dark", styles: {variables: {"--color-background-primary": "rgb(16, 16, 16)"}}}}});
		break;
	case "ui/notifications/initialized":
		toCard({method: "ui/notifications/tool-input", params: {arguments: {}}});
		pushResult(%s);
		break;
	case "tools/call":
	case "ui/open-link": {
		const resp = await fetch(base + "/" + m.method.replace("/", "-"), {method: "POST", body: JSON.stringify(m.params)});
		const body = await resp.json();
		toCard(resp.ok ? {id: m.id, result: body} : {id: m.id, error: {code: -32000, message: body.message}});
		break;
	}
	}
});
frame.srcdoc = %s;
</script></body></html>`
