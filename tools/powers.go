package tools

import (
	"context"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/auth"
)

// Some powers undo the oversight a person keeps over their agent: weakening
// an org setting, resetting a password, changing the admin password, making
// an admin. Whatever credential a tool call carries (a login, personal or
// OAuth token, or the org's admin password), it is an agent's: the tools
// refuse these powers, and the person uses them in the web app, signed in.

// personOnly is the refusal of a power only a person holds: what it is,
// and the page of the web app where the person uses it, built by page
// from the public URL.
func (s *Server) personOnly(ctx context.Context, what string, page func(base string) string) error {
	return ctalk.Errorf(ctalk.EForbidden, "%s is for a person, not an agent, whatever credential the agent holds; your person does it in ctalk's web app, signed in, at %s", what, page(s.publicURLFromContext(ctx)))
}

// factorOf is how the caller of sess proved who they are, for the audit
// log: the kind of token an agent called with.
func factorOf(sess *auth.Session) string {
	switch {
	case sess == nil:
		return ""
	case sess.GrantID != "":
		return audit.FactorOAuthToken
	case sess.Kind == auth.KindPersonal:
		return audit.FactorPersonalToken
	}
	return audit.FactorLoginToken
}
