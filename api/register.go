package api

// registerTools adds every MCP tool to the server.
func (s *Server) registerTools() {
	s.registerAccountTools()
	s.registerInboxTools()
	s.registerAuditTools()
	s.registerChannelTools()
}
