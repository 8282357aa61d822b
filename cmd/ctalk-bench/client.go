package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/internal/mcpclient"
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

// connect opens an MCP session to base/mcp in the client's era through the
// shared transport, sending the token as a bearer header when it is not
// empty, else opted in to anonymous set-up (see mcpclient.Bearer).
func (c *client) connect(ctx context.Context, base, token string) (*mcp.ClientSession, error) {
	tr := mcpclient.Bearer(token)
	tr.Next = c.tr
	return mcpclient.Dial(ctx, base, c.era, tr)
}

// callTool calls a tool and returns its structured result; a tool error is
// a *mcpclient.ToolError.
var callTool = mcpclient.CallTool

// str returns a string field of a tool result.
func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// get fetches url and discards the body; a status other than 200 is an
// error.
func (c *client) get(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
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

// metrics reads the named series from a server's /metrics.
func (c *client) metrics(ctx context.Context, base, token string, names ...string) (map[string]float64, error) {
	return mcpclient.Metrics(ctx, c.http, base, token, names...)
}
