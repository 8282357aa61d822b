package sso

import (
	"context"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/orgs"
)

// Gate is auth's SignInGate for orgs that require single sign-on: where
// sso_required is on, a password or passkey alone signs nobody in, but an
// admin's password on the web app, which opens only the passkey
// verification that completes the break-glass sign-in (see BreakGlass).
//
// Returns EForbidden with what to do instead, or the database's errors.
func (s *Service) Gate(ctx context.Context, orgID, userID, door string) error {
	orgID, err := ctalk.ParseID("org_id", orgID)
	if err != nil {
		// The sign-in says what is wrong with the id.
		return nil
	}
	on, err := s.Required(ctx, orgID)
	if err != nil || !on {
		return err
	}
	switch door {
	case auth.DoorMCP:
		return ctalk.Errorf(ctalk.EForbidden, "organization %q requires single sign-on, so login with a password is refused: connect your agent by OAuth (it opens the sign-in page, where you sign in with your organization's SSO), or use a personal token made in the web app", orgID)
	case auth.DoorWeb:
		if u, err := s.orgs.User(ctx, orgID, userID); err == nil && u.Role == orgs.RoleAdmin {
			return nil
		}
	}
	return ctalk.Errorf(ctalk.EForbidden, "organization %q requires single sign-on: choose \"Sign in with your organization's SSO\". Admins keep a break-glass sign-in with their password and a passkey", orgID)
}

// BreakGlass reports whether sess is an admin's password sign-in to an org
// that requires single sign-on: the session opens nothing but a passkey
// verification until it holds one.
//
// Returns only the database's errors.
func (s *Service) BreakGlass(ctx context.Context, sess *auth.Session) (bool, error) {
	if sess.SignedInWith != auth.SignedInPassword {
		return false, nil
	}
	return s.Required(ctx, sess.OrgID)
}
