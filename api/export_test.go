package api

import (
	"errors"

	"github.com/mark3labs/mcp-go/server"
)

// MCPSessionKnown says whether mcp-go still holds the MCP session id
// registered, for the tests of the session idle TTL. It sends the session a
// log notification, which a client ignores.
func (s *Server) MCPSessionKnown(id string) bool {
	err := s.mcp.SendNotificationToSpecificClient(id, "notifications/message", map[string]any{"level": "debug", "data": "probe"})
	return !errors.Is(err, server.ErrSessionNotFound)
}
