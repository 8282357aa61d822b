package api

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/orgs"
)

// memberArgs names a member of an org for an admin action.
type memberArgs struct {
	tokenArg
	OrgID         string `json:"org_id"`
	AdminPassword string `json:"admin_password"`
	UserID        string `json:"user_id"`
}

type removeUserResult struct {
	*orgs.Removal
	Message string `json:"message"`
}

type revokedResult struct {
	UserID        string `json:"user_id"`
	TokensRevoked int    `json:"tokens_revoked" jsonschema:"how many live tokens were revoked"`
	Message       string `json:"message"`
}

type changePasswordArgs struct {
	tokenArg
	CurrentPassword string `json:"current_password"`
	NewPassword     string `json:"new_password"`
}

type changePasswordResult struct {
	Changed            bool   `json:"changed"`
	OtherTokensRevoked int    `json:"other_tokens_revoked" jsonschema:"your other tokens, now revoked; the one of this call keeps working"`
	Message            string `json:"message"`
}

type resetPasswordArgs struct {
	memberArgs
	NewPassword string `json:"new_password"`
}

type changeAdminPasswordArgs struct {
	tokenArg
	OrgID            string `json:"org_id"`
	AdminPassword    string `json:"admin_password"`
	NewAdminPassword string `json:"new_admin_password"`
}

type changeAdminPasswordResult struct {
	Changed bool   `json:"changed"`
	Message string `json:"message"`
}

// revoked is the result of an admin action that revoked a member's tokens;
// userID passed the domain's check, so it parses.
func revoked(userID string, n int, msg string) *revokedResult {
	id, _ := ctalk.ParseID("user_id", userID)
	return &revokedResult{UserID: id, TokensRevoked: n, Message: msg}
}

// authorizeMember authorizes an admin action on a member of in.OrgID, as
// authorizeAdmin does, and records the member for the call's audit event.
func (s *Server) authorizeMember(ctx context.Context, in *memberArgs) (string, error) {
	orgID, err := s.authorizeAdmin(ctx, in, in.OrgID, in.AdminPassword)
	if err != nil {
		return "", err
	}
	touch(ctx, in.UserID)
	return orgID, nil
}

func (s *Server) registerMemberTools() {
	s.registerRemoveUser()
	s.registerRevokeUserTokens()
	s.registerChangePassword()
	s.registerResetUserPassword()
	s.registerChangeAdminPassword()
}

func (s *Server) registerRemoveUser() {
	addTool(s, mcp.NewTool("remove_user",
		mcp.WithDescription("Org admins only: remove a member from the organization. All their tokens stop working at once; they can no longer log in, be asked or be listed. Questions they asked stay readable by their recipients, marked as from a former member. Their user id is not given to anyone else later. The last admin cannot be removed."),
		mcp.WithString("org_id", mcp.Required(), mcp.Description("Your organization.")),
		mcp.WithString("admin_password", mcp.Description("The org's admin password; may be omitted when you are logged in as an org admin.")),
		mcp.WithString("user_id", mcp.Required(), mcp.Description("The member to remove.")),
		authTokenParam,
		annotations(false, true, true),
	), func(ctx context.Context, in *memberArgs) (*removeUserResult, error) {
		orgID, err := s.authorizeMember(ctx, in)
		if err != nil {
			return nil, err
		}
		r, err := s.orgs.RemoveUser(ctx, orgID, in.UserID)
		if err != nil {
			return nil, err
		}
		return &removeUserResult{Removal: r, Message: "the member is removed and their tokens are revoked; their user id stays reserved"}, nil
	})
}

func (s *Server) registerRevokeUserTokens() {
	addTool(s, mcp.NewTool("revoke_user_tokens",
		mcp.WithDescription("Org admins only: revoke every token of a member, for example a lost laptop's. They stop working at once; the member can log in again with their password."),
		mcp.WithString("org_id", mcp.Required(), mcp.Description("Your organization.")),
		mcp.WithString("admin_password", mcp.Description("The org's admin password; may be omitted when you are logged in as an org admin.")),
		mcp.WithString("user_id", mcp.Required(), mcp.Description("The member whose tokens to revoke.")),
		authTokenParam,
		annotations(false, true, true),
	), func(ctx context.Context, in *memberArgs) (*revokedResult, error) {
		orgID, err := s.authorizeMember(ctx, in)
		if err != nil {
			return nil, err
		}
		n, err := s.auth.RevokeUserTokens(ctx, orgID, in.UserID)
		if err != nil {
			return nil, err
		}
		return revoked(in.UserID, n, "every token of this member is revoked; they can log in again with their password"), nil
	})
}

func (s *Server) registerChangePassword() {
	addIdentifiedTool(s, mcp.NewTool("change_password",
		mcp.WithDescription("Change your own password. Needs the current one. Your other tokens stop working at once; the token of this call keeps working."),
		mcp.WithString("current_password", mcp.Required(), mcp.Description("Your current password.")),
		mcp.WithString("new_password", mcp.Required(), mcp.Description("Your new password, 8 to 72 bytes.")),
		authTokenParam,
		annotations(false, true, false),
	), func(ctx context.Context, sess *auth.Session, in *changePasswordArgs) (*changePasswordResult, error) {
		n, err := s.auth.ChangePassword(ctx, sess, in.CurrentPassword, in.NewPassword)
		if err != nil {
			return nil, err
		}
		return &changePasswordResult{Changed: true, OtherTokensRevoked: n, Message: "your password is changed; your other tokens are revoked, this one keeps working"}, nil
	})
}

func (s *Server) registerResetUserPassword() {
	addTool(s, mcp.NewTool("reset_user_password",
		mcp.WithDescription("Org admins only: set a new password for a member who lost theirs or whose account may be misused. All their tokens stop working at once; give them the new password privately, not through an agent."),
		mcp.WithString("org_id", mcp.Required(), mcp.Description("Your organization.")),
		mcp.WithString("admin_password", mcp.Description("The org's admin password; may be omitted when you are logged in as an org admin.")),
		mcp.WithString("user_id", mcp.Required(), mcp.Description("The member whose password to reset.")),
		mcp.WithString("new_password", mcp.Required(), mcp.Description("Their new password, 8 to 72 bytes.")),
		authTokenParam,
		annotations(false, true, true),
	), func(ctx context.Context, in *resetPasswordArgs) (*revokedResult, error) {
		orgID, err := s.authorizeMember(ctx, &in.memberArgs)
		if err != nil {
			return nil, err
		}
		n, err := s.auth.ResetPassword(ctx, orgID, in.UserID, in.NewPassword)
		if err != nil {
			return nil, err
		}
		return revoked(in.UserID, n, "the password is reset and every token of this member is revoked"), nil
	})
}

func (s *Server) registerChangeAdminPassword() {
	addTool(s, mcp.NewTool("change_admin_password",
		mcp.WithDescription("Org admins only: replace the organization's admin password. Needs the current admin password, or the token of an org admin. The old password stops working at once."),
		mcp.WithString("org_id", mcp.Required(), mcp.Description("Your organization.")),
		mcp.WithString("admin_password", mcp.Description("The current admin password; may be omitted when you are logged in as an org admin.")),
		mcp.WithString("new_admin_password", mcp.Required(), mcp.Description("The new admin password, 12 to 72 bytes.")),
		authTokenParam,
		annotations(false, true, true),
	), func(ctx context.Context, in *changeAdminPasswordArgs) (*changeAdminPasswordResult, error) {
		orgID, err := s.authorizeAdmin(ctx, in, in.OrgID, in.AdminPassword)
		if err != nil {
			return nil, err
		}
		if err := s.auth.ChangeAdminPassword(ctx, orgID, in.NewAdminPassword); err != nil {
			return nil, err
		}
		return &changeAdminPasswordResult{Changed: true, Message: "the admin password is changed; the old one no longer works"}, nil
	})
}
