package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// The floors every row is compared with, served in this process beside
// ctalk by serveHTTP, with the same HTTP server settings:
//
//   - bare net/http: a handler that answers what GET /health answers, the
//     least any HTTP request can cost;
//   - bare mcp-go: the MCP library ctalk must use, with ctalk's MCP options
//     and one trivial tool, and nothing else (no token, no database, no
//     middleware, no log): the least any tool call can cost.
const (
	opBareHealth = "GET /health (bare net/http)"
	opFloorTool  = "mcp-go floor: trivial tool (wire)"
	floorTool    = "whoami"
)

// floors are the URLs of the two floor servers.
type floors struct {
	bare, mcp string
}

// startFloors serves the two floors until ctx ends; close stops them.
func startFloors(ctx context.Context) (floors, func(), error) {
	bareURL, bare, err := serveHTTP(ctx, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}` + "\n"))
	}), true)
	if err != nil {
		return floors{}, nil, err
	}
	s := mcpserver.NewMCPServer("mcp-go-floor", "1", mcpserver.WithToolCapabilities(false), mcpserver.WithRecovery())
	s.AddTool(mcp.NewTool(floorTool, mcp.WithDescription("Returns a fixed identity.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructured(map[string]string{"org_id": "floor", "user_id": "floor"}, `{"org_id":"floor","user_id":"floor"}`), nil
		})
	h := mcpserver.NewStreamableHTTPServer(s, mcpserver.WithDisableLocalhostProtection(true), mcpserver.WithDisableStreaming(true))
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mcpURL, mcpSrv, err := serveHTTP(ctx, mux, true)
	if err != nil {
		bare.Close()
		return floors{}, nil, fmt.Errorf("serve the mcp-go floor: %w", err)
	}
	return floors{bare: bareURL, mcp: mcpURL}, func() { bare.Close(); mcpSrv.Close(); h.Shutdown(context.Background()) }, nil
}
