package ctalk

// SetupParam and SetupHeader opt an MCP client that sends no credential in
// to anonymous account set-up at /mcp: "/mcp?setup=1", or the header
// "X-Ctalk-Setup: 1" on every request. Without either, a connection made
// with no credential is answered 401 with the OAuth challenge, so that
// OAuth clients start the sign-in as soon as they connect; with one, it is
// offered the account set-up tools (register_organization, register_user,
// login). The server (api) reads them; ctalk's own clients
// (internal/mcpclient, the stdio bridge) send the header when they have no
// token.
const (
	SetupParam  = "setup"
	SetupHeader = "X-Ctalk-Setup"
)
