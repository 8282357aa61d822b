package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/oauth"
	"github.com/ctalk/ctalk/web"
)

// mountOAuth adds the authorization server (metadata, registration, token,
// revocation) and the sign-in pages to e.
func (s *Server) mountOAuth(e *echo.Echo) {
	ep := s.oauth.Endpoints(s.log, s.publicURL, func(r *http.Request) string { return clientIP(r.Context()) })
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

	s.web = web.New(web.Config{
		Logger:            s.log,
		PublicURL:         s.publicURL,
		CheckSignup:       s.checkSignup,
		SignupNeedsSecret: !s.cfg.AllowOrgSignup,
		SecureCookies:     strings.HasPrefix(s.cfg.PublicURL, "https://"),
		Version:           s.cfg.Version,
		Build:             s.cfg.Build,
		Stop:              s.stop,
	}, web.Services{Auth: s.auth, Orgs: s.orgs, OAuth: s.oauth, Inbox: s.inbox, Channels: s.channels, Audit: s.cfg.Audit, Access: s.access})
	s.web.Mount(e)
}

// authenticate turns any credential an agent presents (a login or personal
// token, or an OAuth access token for this server's /mcp) into a session.
//
// Returns EUnauthorized for a credential that is not valid here.
func (s *Server) authenticate(ctx context.Context, raw string) (*auth.Session, error) {
	if oauth.IsAccessToken(raw) {
		return s.oauth.Authenticate(ctx, raw, oauth.SiteOf(s.publicURLFromContext(ctx)).Resource)
	}
	return s.auth.Authenticate(ctx, raw)
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
		if req.Method != http.MethodPost || ctx.Value(sessionKey) != nil || ctx.Value(authErrKey) != nil {
			return next(c)
		}
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return err
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					AuthToken any `json:"auth_token"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(b, &msg) != nil || msg.Method != "tools/call" || !s.tools[msg.Params.Name].identified || msg.Params.Arguments.AuthToken != nil {
			return next(c)
		}
		const text = "sign in first: this tool acts as you. Clients with OAuth (Claude Code: /mcp) open the sign-in page; others send \"Authorization: Bearer <token>\" from the login tool"
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, s.challenge(ctx, "", ""))
		return c.JSON(http.StatusUnauthorized, map[string]string{"error": "unauthorized", "message": text})
	}
}

// revokeOAuthGrant ends the OAuth connection a session came from, if any:
// logout from an agent connected by OAuth disconnects that agent.
func (s *Server) revokeOAuthGrant(ctx context.Context, sess *auth.Session) error {
	if sess.GrantID == "" {
		return nil
	}
	// auth announces the revocation after it commits, so that the waits and
	// streams the grant's tokens hold open end on every replica.
	return s.oauth.RevokeGrant(ctx, sess.OrgID, sess.UserID, sess.GrantID)
}
