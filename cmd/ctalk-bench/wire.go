package main

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/internal/mcpclient"
)

// wire returns a wire session that continues cs through the run's one
// net/http client. GET /health goes through the same client, so a tool's
// "wire" row and the health row differ only in what the server does: on
// this machine the client shares the two cores with the server, and the
// go-sdk client's own work would otherwise count against the server.
func (c *client) wire(base, token string, cs *mcp.ClientSession) *mcpclient.Wire {
	return mcpclient.Continue(c.http, base, token, c.era, cs)
}

// wireCall is a wire tool call as a timed operation.
func wireCall(w *mcpclient.Wire, tool string, args map[string]any) call {
	return func(ctx context.Context) error { return w.Call(ctx, tool, args) }
}
