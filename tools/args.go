package tools

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/wait"
)

// tokenArg is embedded in the input of every tool that needs identity: the
// token normally comes from the Authorization header, and only clients that
// cannot set one pass it here.
type tokenArg struct {
	AuthToken string `json:"auth_token"`
}

func (t tokenArg) token() string { return t.AuthToken }

type hasToken interface{ token() string }

// authTokenParam documents the auth_token argument in input schemas.
var authTokenParam = mcp.WithString("auth_token",
	mcp.Description("Your ctalk token, only when your client cannot send the Authorization: Bearer header (preferred: it keeps the token out of the conversation)."))

// adminArgs is embedded in the input of every admin tool: the org it
// administers, and the org's admin password when the caller is not an
// admin of it by token.
type adminArgs struct {
	tokenArg
	OrgID         string `json:"org_id"`
	AdminPassword string `json:"admin_password"`
}

func (a adminArgs) adminCredentials() (orgID, password string) { return a.OrgID, a.AdminPassword }

// adminPasswordParam documents the admin_password argument of admin tools.
var adminPasswordParam = mcp.WithString("admin_password",
	mcp.Description("The org's admin password; may be omitted when you are logged in as an org admin."))

// adminRequest is the input of an admin tool (see addAdminTool).
type adminRequest interface {
	hasToken
	adminCredentials() (orgID, password string)
}

// memberArgs names a member of an org for an admin action.
type memberArgs struct {
	adminArgs
	UserID string `json:"user_id"`
}

// adminPasswordCaller is the user recorded for calls authorized by an org's
// admin password rather than a token.
const adminPasswordCaller = "admin-password"

// authorizeAdmin lets a call administer orgID when the caller is an admin of
// that org by token, or gives its admin password, and records the org for
// the call's audit event. It returns the normalized org id.
//
// Returns ENotFound, EUnauthorized, EForbidden or ERateLimited.
func (s *Server) authorizeAdmin(ctx context.Context, in hasToken, orgID, adminPassword string) (string, error) {
	sess, err := s.optionalSession(ctx, in)
	if err != nil {
		return "", err
	}
	id, err := s.orgs.AuthorizeAdmin(ctx, sess, orgID, adminPassword)
	if err != nil {
		if sess == nil && adminPassword != "" {
			s.recordAttempt(ctx, orgID, adminPasswordCaller, err)
		}
		return "", err
	}
	orgID = id
	s.adminCaller(ctx, sess, orgID)
	return orgID, nil
}

// adminCaller records the org an admin call acted on, so that the org's
// admins see it in their audit log.
func (s *Server) adminCaller(ctx context.Context, sess *auth.Session, orgID string) {
	c, ok := ctx.Value(callKey).(*call)
	if !ok {
		return
	}
	c.orgID = orgID
	if sess == nil {
		c.userID, c.factor = adminPasswordCaller, audit.FactorAdminPassword
	}
}

// ownershipArg accepts a list of strings or one comma-separated string.
type ownershipArg []string

func (o *ownershipArg) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		*o = list
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*o = orgs.SplitOwnership(s)
		return nil
	}
	return &argError{ctalk.Errorf(ctalk.EInvalid, "argument \"ownership\" must be a list of strings, or one comma-separated string")}
}

// touchMessage records a message_id argument for the audit log when it has
// the shape of a message id; any other string may be a secret given in the
// wrong argument, and one shaped like a user id would pass touch's check.
func touchMessage(ctx context.Context, id string) {
	if id = strings.TrimSpace(id); inbox.IsMessageID(id) {
		touch(ctx, id)
	}
}

// intArg validates an optional whole-number argument.
func intArg(name string, v *float64, def, lo, hi int) (int, error) {
	if v == nil {
		return def, nil
	}
	if *v != math.Trunc(*v) || *v < float64(lo) || *v > float64(hi) {
		return 0, ctalk.Errorf(ctalk.EInvalid, "%s must be a whole number from %d to %d", name, lo, hi)
	}
	return int(*v), nil
}

// defaultWait is how long a waiting tool waits when timeout_s is omitted.
const defaultWait = 30 * time.Second

// waitArg validates timeout_s; values above the cap, +Inf included, are
// lowered to it. The cap applies in seconds, before the conversion to a
// Duration, which would overflow past 292 years and come out negative.
func waitArg(v *float64) (time.Duration, error) {
	if v == nil {
		return defaultWait, nil
	}
	if math.IsNaN(*v) || *v < 0 {
		return 0, ctalk.Errorf(ctalk.EInvalid, "timeout_s must be a number of seconds from 0 to %d (larger values are lowered to %d)", int(wait.MaxWait.Seconds()), int(wait.MaxWait.Seconds()))
	}
	if *v >= wait.MaxWait.Seconds() {
		return wait.MaxWait, nil
	}
	return time.Duration(*v * float64(time.Second)), nil
}
