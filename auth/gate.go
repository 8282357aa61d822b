package auth

import "context"

// The doors a person signs in by without their organization's identity
// provider, which a SignInGate is asked about.
const (
	// DoorWeb is a password on a sign-in page of the web app.
	DoorWeb = "web"
	// DoorMCP is a password given to the MCP login tool.
	DoorMCP = "mcp"
	// DoorPasskey is a passkey alone on a sign-in page.
	DoorPasskey = "passkey"
)

// SignedInSSO is how a browser session begun through the organization's
// identity provider was begun (Session.SignedInWith).
const SignedInSSO = "sso"

// SignedInPassword is how a browser session begun with a password was
// begun (Session.SignedInWith).
const SignedInPassword = signedInPassword

// SignInGate says whether orgID's member userID may sign in by door; a
// non-nil error is the refusal: given before the password is checked at
// DoorMCP, after it at DoorWeb (so that a wrong password answers alike for
// members and admins), after the passkey at DoorPasskey.
type SignInGate func(ctx context.Context, orgID, userID, door string) error

// SetSignInGate has every password and passkey sign-in ask g first (the
// organizations' single sign-on, when it is required). Set once, before
// the server serves.
func (s *Service) SetSignInGate(g SignInGate) { s.gate = g }

func (s *Service) admit(ctx context.Context, orgID, userID, door string) error {
	if s.gate == nil {
		return nil
	}
	return s.gate(ctx, orgID, userID, door)
}
