package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

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

// challengeAnonymous answers 401 with an OAuth challenge to a call of a tool
// that needs identity made with no credential at all: no Authorization
// header and no auth_token argument. OAuth clients then sign the person in
// in the browser (Claude Code marks the server as needing sign-in, done with
// /mcp). initialize, tools/list and the account tools that take passwords
// stay open, so clients without OAuth work as before.
func (s *Server) challengeAnonymous(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		ctx := req.Context()
		if reqctx.Session(ctx) != nil || reqctx.AuthError(ctx) != nil {
			return next(c)
		}
		msg := rpcOf(c)
		if tool := msg.ToolCall(); tool == "" || !s.tools.Identified(tool) || msg.Params().AuthToken {
			return next(c)
		}
		const text = "sign in first: this tool acts as you. Clients with OAuth (Claude Code: /mcp) open the sign-in page; others send \"Authorization: Bearer <token>\" from the login tool"
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, s.challenge(ctx, "", ""))
		return c.JSON(http.StatusUnauthorized, map[string]string{"error": "unauthorized", "message": text})
	}
}
