package api

import (
	"context"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/oauth"
	"github.com/ctalk/ctalk/wait"
)

// credential returns the credential of a session authenticated from raw, as
// the waits and streams opened with it remember it: its check reads raw
// anew, bypassing the token cache, so that one logout ends only what that
// token holds, and refuses it once the user's role has changed.
// seen is the broker's Revocations taken before raw was checked.
func (s *Server) credential(ctx context.Context, raw string, sess *auth.Session, seen uint64) *wait.Credential {
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
	cred, _ := ctx.Value(credentialKey).(*wait.Credential)
	return cred
}

// broker is the broker every wait of the server waits on.
func (s *Server) broker() *wait.Broker { return s.inbox.Broker() }

// hold returns ctx, ended once the credential the request was identified
// with is revoked (see wait.Broker.Hold): for a stream, whose waits come
// one after another.
func (s *Server) hold(ctx context.Context) (context.Context, func()) {
	return s.broker().Hold(ctx, credentialOf(ctx))
}
