package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk"
)

// Wire sends tool calls as the JSON-RPC requests an MCP client puts on the
// wire, through a plain net/http client, without the SDK client's own
// machinery (its JSON-RPC layer, typed decoding): what a load test measures
// is then the server's work, not the client's. It continues a session the
// SDK opened.
type Wire struct {
	http      *http.Client
	endpoint  string
	token     string
	sessionID string // empty in the stateless era
	era       string
	meta      json.RawMessage // params._meta in the stateless era
	nextID    atomic.Int64
}

// Continue returns a Wire that continues cs, opened to base/mcp in era
// with token: the same endpoint, token, protocol version and, in the
// 2025-11-25 era, the same MCP session. It sends through hc.
func Continue(hc *http.Client, base, token, era string, cs *mcp.ClientSession) *Wire {
	w := &Wire{http: hc, endpoint: base + "/mcp", token: token, era: era}
	if era == EraSessions {
		w.sessionID = cs.ID()
	} else {
		// The keys the go-sdk client puts in every request's _meta.
		w.meta, _ = json.Marshal(map[string]any{
			mcp.MetaKeyProtocolVersion:    era,
			mcp.MetaKeyClientInfo:         map[string]string{"name": "ctalk-client", "version": "1"},
			mcp.MetaKeyClientCapabilities: map[string]any{},
		})
	}
	return w
}

// Call calls tool with args and reports a JSON-RPC error or a tool error
// (a *ToolError) as an error, as CallTool does.
func (w *Wire) Call(ctx context.Context, tool string, args map[string]any) error {
	_, err := w.Result(ctx, tool, args)
	return err
}

// Result calls tool with args, as Call does, and returns the result's
// structured content.
func (w *Wire) Result(ctx context.Context, tool string, args map[string]any) (json.RawMessage, error) {
	return w.send(ctx, "tools/call", map[string]any{"name": tool, "arguments": args}, tool, true)
}

// Ping sends an MCP ping, with or without the session's token: the least
// work any MCP request costs the server, and with the token, any
// authenticated one.
func (w *Wire) Ping(ctx context.Context, withToken bool) error {
	_, err := w.send(ctx, "ping", map[string]any{}, "ping", withToken)
	return err
}

// send posts one JSON-RPC request and returns the structured content of its
// result; tool names it in errors.
func (w *Wire) send(ctx context.Context, method string, params map[string]any, tool string, withToken bool) (json.RawMessage, error) {
	if w.meta != nil {
		params["_meta"] = w.meta
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": w.nextID.Add(1), "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	data, err := w.post(ctx, body, tool, withToken)
	if err != nil {
		return nil, err
	}
	return decodeResult(tool, data)
}

// post sends body with the session's headers and returns the JSON-RPC
// response: the body, or the last data line of an event stream (the
// notifications before it skipped).
func (w *Wire) post(ctx context.Context, body []byte, tool string, withToken bool) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", w.era)
	if withToken && w.token != "" {
		req.Header.Set("Authorization", "Bearer "+w.token)
	} else {
		// Without a credential, as the session was opened (see Bearer): a
		// stateless request is otherwise refused with the sign-in challenge.
		req.Header.Set(ctalk.SetupHeader, "1")
	}
	if w.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", w.sessionID)
	}
	resp, err := w.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %s: %s", tool, resp.Status, bytes.TrimSpace(data))
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return data, nil
	}
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for sc.Scan() {
		if line, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
			last = bytes.TrimSpace(line)
		}
	}
	return last, nil
}

// decodeResult returns the structured content of a JSON-RPC response to a
// call of tool, or its error.
func decodeResult(tool string, data []byte) (json.RawMessage, error) {
	var msg struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
		Result *struct {
			IsError bool `json:"isError"`
			// Content, the text copy of the result, is decoded only for
			// an error's message: unquoting it costs the client as much as
			// the rest of the response.
			Content    json.RawMessage `json:"content"`
			Structured json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &msg); err != nil {
		return nil, fmt.Errorf("%s: the response is not JSON-RPC: %w", tool, err)
	}
	switch {
	case msg.Error != nil:
		return nil, fmt.Errorf("%s: %s", tool, msg.Error.Message)
	case msg.Result == nil:
		return nil, fmt.Errorf("%s: the response has no result", tool)
	case msg.Result.IsError:
		var content []struct {
			Text string `json:"text"`
		}
		json.Unmarshal(msg.Result.Content, &content)
		var parts []string
		for _, c := range content {
			parts = append(parts, c.Text)
		}
		return nil, &ToolError{Tool: tool, Text: strings.Join(parts, "\n")}
	}
	return msg.Result.Structured, nil
}
