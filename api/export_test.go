package api

import (
	"errors"

	"github.com/labstack/echo/v4"
	"github.com/mark3labs/mcp-go/server"
)

// OpenAPI is the REST mirror's OpenAPI document, as the server serves it.
var OpenAPI = openAPI

// Routes lists the routes the server's echo application serves.
func (s *Server) Routes() []*echo.Route { return s.echo.Routes() }

// ListTools returns the tools the server's MCP handler serves.
func (s *Server) ListTools() map[string]*server.ServerTool { return s.mcp.ListTools() }

// MCPSessionKnown says whether mcp-go still holds the MCP session id
// registered, for the tests of the session idle TTL. It sends the session a
// log notification, which a client ignores.
func (s *Server) MCPSessionKnown(id string) bool {
	err := s.mcp.SendNotificationToSpecificClient(id, "notifications/message", map[string]any{"level": "debug", "data": "probe"})
	return !errors.Is(err, server.ErrSessionNotFound)
}
