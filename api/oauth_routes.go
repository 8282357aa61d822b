package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/internal/reqctx"
	"github.com/ctalk/ctalk/oauth"
)

// mountOAuth adds the authorization server's endpoints (metadata,
// registration, token, revocation) to e.
func (s *Server) mountOAuth(e *echo.Echo) {
	ep := s.oauth.Endpoints(s.log, s.publicURL, func(r *http.Request) string { return reqctx.Client(r.Context()) })
	for _, path := range []string{oauth.RootResourceMetadata, oauth.ResourceMetadataPath} {
		e.Match([]string{http.MethodGet, http.MethodOptions}, path, echo.WrapHandler(http.HandlerFunc(ep.ProtectedResource)))
	}
	// Some clients look for the authorization server's metadata under the
	// resource's path, or by OpenID discovery; both get the same document.
	for _, path := range []string{oauth.AuthServerMetadataPath, oauth.AuthServerMetadataPath + "/mcp", "/.well-known/openid-configuration"} {
		e.Match([]string{http.MethodGet, http.MethodOptions}, path, echo.WrapHandler(http.HandlerFunc(ep.AuthServer)))
	}
	e.Match([]string{http.MethodPost, http.MethodOptions}, oauth.RegisterPath, echo.WrapHandler(http.HandlerFunc(ep.Register)))
	e.Match([]string{http.MethodPost, http.MethodOptions}, oauth.TokenPath, echo.WrapHandler(http.HandlerFunc(ep.Token)))
	e.Match([]string{http.MethodPost, http.MethodOptions}, oauth.RevokePath, echo.WrapHandler(http.HandlerFunc(ep.Revoke)))
}

// challenge is the WWW-Authenticate value of a 401 from /mcp: it points
// OAuth clients at the resource metadata, from which they find the sign-in.
func (s *Server) challenge(ctx context.Context, errCode, desc string) string {
	return oauth.Challenge(oauth.SiteOf(s.publicURLFromContext(ctx)), errCode, desc)
}

// setupOptIn says whether req opts in to anonymous set-up, by
// ctalk.SetupHeader or the ctalk.SetupParam parameter (the header wins):
// "1" or "true" does, "0" or "false" does not, and any other value is an
// error that says so.
func setupOptIn(req *http.Request) (bool, error) {
	v := req.Header.Get(ctalk.SetupHeader)
	if v == "" {
		v = req.URL.Query().Get(ctalk.SetupParam)
	}
	if v == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, fmt.Errorf("%s %q is neither 1 nor 0: connect to /mcp?%s=1, or send the header %s: 1, to set up an organization or an account without signing in", ctalk.SetupParam, ctalk.Shorten(v, 40), ctalk.SetupParam, ctalk.SetupHeader)
	}
	return on, nil
}

// challengeAnonymous answers 401 with an OAuth challenge to a request made
// with no credential at all (no Authorization header, no auth_token
// argument) that either calls a tool that needs identity, or opens a
// connection without opting in to anonymous set-up (see
// ctalk.SetupParam): an initialize of the 2025-11-25 protocol, or, in the stateless 2026-07-28
// protocol, where each request stands alone, any request but a tool call
// (server/discover, tools/list, ping, ...). OAuth clients then sign the
// person in in the browser (Claude Code marks the server as needing sign-in
// and starts it at once). With the opt-in, initialize, tools/list and the
// account tools that take passwords stay open, for clients without OAuth
// and for setting up an organization; those tools answer a call without
// the opt-in too, since each carries a password of its own.
func (s *Server) challengeAnonymous(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		ctx := req.Context()
		setup, err := setupOptIn(req)
		if err != nil {
			return invalidRequest(c, http.StatusBadRequest, err.Error())
		}
		if reqctx.Session(ctx) != nil || reqctx.AuthError(ctx) != nil {
			return next(c)
		}
		msg := rpcOf(c)
		if tool := msg.ToolCall(); tool != "" {
			if !s.tools.Identified(tool) || msg.Params().AuthToken {
				return next(c)
			}
			return s.signInFirst(c, "sign in first: this tool acts as you. Clients with OAuth (Claude Code: /mcp) open the sign-in page; others send \"Authorization: Bearer <token>\" from the login tool")
		}
		if setup || !opensConnection(req, msg) {
			return next(c)
		}
		return s.signInFirst(c, fmt.Sprintf("sign in first: ctalk serves signed-in people. Clients with OAuth (Claude Code: /mcp) open the sign-in page; others send \"Authorization: Bearer <token>\". To set up an organization or an account, or to log in with a password, without signing in, connect to %s/mcp?%s=1 (or send the header %s: 1)", s.publicURLFromContext(ctx), ctalk.SetupParam, ctalk.SetupHeader))
	}
}

// opensConnection says whether msg, a request to /mcp, opens an MCP
// connection: initialize in the 2025-11-25 protocol, whose later requests
// ride on the session it opens; any request in the stateless 2026-07-28
// protocol, which has no session to ride on.
func opensConnection(req *http.Request, msg *rpcMessage) bool {
	if msg == nil || msg.Kind != rpcRequest {
		return false
	}
	return msg.Method == string(mcp.MethodInitialize) || mcp.IsModernProtocol(req.Header.Get(mcp.HeaderProtocolVersion))
}

// signInFirst answers 401 with the OAuth challenge and text, which says how
// to sign in.
func (s *Server) signInFirst(c echo.Context, text string) error {
	c.Response().Header().Set(echo.HeaderWWWAuthenticate, s.challenge(c.Request().Context(), "", ""))
	return c.JSON(http.StatusUnauthorized, map[string]string{"error": "unauthorized", "message": text})
}
