package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// client is the one HTTP client of a run: every MCP session, GET /health and
// GET /metrics share its Transport, so every phase pays the same connection
// costs and reuses keep-alive connections the same way.
type client struct {
	tr   *http.Transport
	http *http.Client
	era  string
}

func newClient(era string, concurrency, waiters int) *client {
	conns := max(concurrency*4, waiters+concurrency, 64)
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		// Loopback only: proxies from the environment do not apply.
		Proxy: nil,
	}
	return &client{tr: tr, http: &http.Client{Transport: tr}, era: era}
}

// bearer adds an Authorization header to each request and hands it to the
// shared transport.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// connect opens an MCP session to base/mcp in the client's era, sending the
// token as a bearer header when it is not empty. The standalone SSE stream
// is off: it would hold one idle connection per session.
func (c *client) connect(ctx context.Context, base, token string) (*mcp.ClientSession, error) {
	mc := mcp.NewClient(&mcp.Implementation{Name: "ctalk-bench", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{
		Endpoint:             base + "/mcp",
		HTTPClient:           &http.Client{Transport: bearer{token, c.tr}},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := mc.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: c.era})
	if err != nil {
		return nil, fmt.Errorf("connect to %s/mcp (%s): %w", base, c.era, err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != c.era {
		cs.Close()
		return nil, fmt.Errorf("the server negotiated protocol %s, not %s", got, c.era)
	}
	return cs, nil
}

// toolError is a tool result with isError set.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

// callTool calls a tool and decodes its structured result. A tool error is
// returned as *toolError.
func callTool(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (map[string]any, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, err
	}
	if res.IsError {
		var parts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		return nil, &toolError{tool + ": " + strings.Join(parts, " ")}
	}
	m, ok := res.StructuredContent.(map[string]any)
	if !ok {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &m); err != nil || m == nil {
			return nil, fmt.Errorf("%s: the structured result %s is not an object", tool, b)
		}
	}
	return m, nil
}

// str returns a string field of a tool result.
func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// get fetches url and discards the body; a status other than 200 is an
// error.
func (c *client) get(ctx context.Context, url, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// metrics reads the named series from a server's /metrics, unlabelled
// samples only.
func (c *client) metrics(ctx context.Context, base, token string, names ...string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok || !contains(names, name) {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			out[name] = v
		}
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("/metrics has no %s", n)
		}
	}
	return out, nil
}

// isCancel reports whether err only says that a call was cut short.
func isCancel(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
