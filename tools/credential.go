package tools

import (
	"context"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/internal/reqctx"
	"github.com/ctalk/ctalk/oauth"
	"github.com/ctalk/ctalk/wait"
)

// Authenticate turns any credential an agent presents (a login or personal
// token, or an OAuth access token for this server's /mcp) into a session.
//
// Returns EUnauthorized for a credential that is not valid here.
func (s *Server) Authenticate(ctx context.Context, raw string) (*auth.Session, error) {
	if oauth.IsAccessToken(raw) {
		return s.oauth.Authenticate(ctx, raw, oauth.SiteOf(s.publicURLFromContext(ctx)).Resource)
	}
	return s.auth.Authenticate(ctx, raw)
}

// Credential returns the credential of a session authenticated from raw, as
// the waits and streams opened with it remember it: its check reads raw
// anew, bypassing the token cache, so that one logout ends only what that
// token holds, and refuses it once the user's role has changed.
// seen is the broker's Revocations taken before raw was checked.
func (s *Server) Credential(ctx context.Context, raw string, sess *auth.Session, seen uint64) *wait.Credential {
	resource := oauth.SiteOf(s.publicURLFromContext(ctx)).Resource
	return &wait.Credential{
		OrgID: sess.OrgID, UserID: sess.UserID, ID: sess.TokenHash, Seen: seen,
		Check: func(ctx context.Context) error {
			var now *auth.Session
			var err error
			if oauth.IsAccessToken(raw) {
				now, err = s.oauth.Authenticate(ctx, raw, resource)
			} else {
				now, err = s.auth.Recheck(ctx, raw)
			}
			if err != nil {
				return err
			}
			if now.Role != sess.Role {
				return ctalk.Errorf(ctalk.EForbidden, "your role changed (from %s to %s) while this was open; call again", sess.Role, now.Role)
			}
			return nil
		},
	}
}

// credentialOf returns the credential a call or request was identified
// with: its Authorization header's, or its auth_token argument's (see
// identify); nil when it has none.
func credentialOf(ctx context.Context) *wait.Credential {
	if c, ok := ctx.Value(callKey).(*call); ok && c.cred != nil {
		return c.cred
	}
	return reqctx.Credential(ctx)
}

// broker is the broker every wait of the server waits on.
func (s *Server) broker() *wait.Broker { return s.inbox.Broker() }

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
