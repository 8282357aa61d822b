package tools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/links"
	"github.com/ctalk/ctalk/orgs"
)

// The admin tools administer one org. Each is registered with addAdminTool,
// which authorizes the caller as an admin of the org named by org_id, by
// token or admin password, before the handler runs.
func (s *Server) registerAdminTools() {
	s.registerRegisterUser()
	s.registerInviteUser()
	s.registerUpdateUserProfileNotes()
	s.registerUpdateOrgSettings()
	s.registerRemoveUser()
	s.registerRevokeUserTokens()
	s.registerResetUserPassword()
	s.registerChangeAdminPassword()
	s.registerGetAuditLog()
	s.registerExportOrg()
}

type registerUserArgs struct {
	adminArgs
	UserID    string       `json:"user_id"`
	Name      string       `json:"name"`
	Password  string       `json:"password"`
	Ownership ownershipArg `json:"ownership"`
	Notes     string       `json:"notes"`
	Role      string       `json:"role"`
	Email     string       `json:"email"`
}

func (s *Server) registerRegisterUser() {
	addAdminTool(s, mcp.NewTool("register_user",
		mcp.WithDescription("Add a person to an organization. Needs the org's admin_password, or the token of an org admin."),
		mcp.WithString("org_id", mcp.Required(), mcp.Description("The organization to add the user to.")),
		adminPasswordParam,
		mcp.WithString("user_id", mcp.Required(), mcp.Description("User id: 1-64 of a-z, 0-9, '-', '_'.")),
		mcp.WithString("name", mcp.Required(), mcp.Description("The person's display name.")),
		mcp.WithString("password", mcp.Required(), mcp.Description("The person's password, 8 to 72 bytes.")),
		mcp.WithAny("ownership", mcp.Required(), mcp.Description("Areas this person owns and can answer for: a list of strings, or one comma-separated string; at most 50 entries of up to 200 characters.")),
		mcp.WithString("notes", mcp.Description("The person's own notes about themselves (optional).")),
		mcp.WithString("role", mcp.Enum(orgs.RoleMember, orgs.RoleAdmin), mcp.Description("member (default) or admin; admin only for the first admin of an organization that has none (later admins are made by an admin in the web app).")),
		mcp.WithString("email", mcp.Description("The person's email address (optional), where password reset links go; one per member of the org.")),
		authTokenParam,
		annotations(false, false, false),
	), func(ctx context.Context, orgID string, in *registerUserArgs) (*orgs.User, error) {
		u, err := s.orgs.AddUserAsAgent(ctx, orgID, orgs.NewUser{
			ID: in.UserID, Name: in.Name, Password: in.Password, Role: in.Role,
			Ownership: in.Ownership, Notes: in.Notes, Email: in.Email,
		})
		if errors.Is(err, orgs.ErrAdminExists) {
			return nil, s.personOnly(ctx, "making someone an admin", links.Admin)
		}
		if err != nil {
			return nil, err
		}
		touch(ctx, u.ID)
		return u, nil
	})
}

type profileNotesArgs struct {
	adminArgs
	UserID       string `json:"user_id"`
	ProfileNotes string `json:"profile_notes"`
}

func (s *Server) registerUpdateUserProfileNotes() {
	addAdminTool(s, mcp.NewTool("update_user_profile_notes",
		mcp.WithDescription("Org admins only: replace the profile notes on a user, which every member of the org can read."),
		mcp.WithString("org_id", mcp.Required(), mcp.Description("The organization.")),
		adminPasswordParam,
		mcp.WithString("user_id", mcp.Required(), mcp.Description("The user whose profile notes to replace.")),
		mcp.WithString("profile_notes", mcp.Required(), mcp.Description("The new profile notes (up to 10,000 characters).")),
		authTokenParam,
		annotations(false, true, true),
	), func(ctx context.Context, orgID string, in *profileNotesArgs) (*orgs.User, error) {
		u, err := s.orgs.SetProfileNotes(ctx, orgID, in.UserID, in.ProfileNotes)
		if err != nil {
			return nil, err
		}
		touch(ctx, u.ID)
		return u, nil
	})
}

type orgSettingsArgs struct {
	adminArgs
	ApprovalMode       string   `json:"approval_mode"`
	ChannelPostMode    string   `json:"channel_post_mode"`
	AgentPasswordLogin string   `json:"agent_password_login"`
	ApprovalFactor     string   `json:"approval_factor"`
	RequirePasskey     *bool    `json:"require_passkey"`
	KnowledgeSharing   string   `json:"knowledge_sharing"`
	KnowledgeStaleDays *float64 `json:"knowledge_stale_days"`
	DepartureQuestions string   `json:"departure_questions"`
}

func (s *Server) registerUpdateOrgSettings() {
	addAdminTool(s, mcp.NewTool("update_org_settings",
		mcp.WithDescription("Org admins only: change organization settings; those left out stay as they are. An agent may only strengthen oversight: approval_mode agent, channel_post_mode agent, agent_password_login allowed, approval_factor session, require_passkey false and knowledge_sharing on are set by a person in the web app. Returns the organization."),
		mcp.WithString("org_id", mcp.Required(), mcp.Description("The organization.")),
		adminPasswordParam,
		mcp.WithString("approval_mode", mcp.Enum(orgs.ApprovalAgent, orgs.ApprovalHuman), mcp.Description("How answers are approved: agent (the agent sends the latest draft its person approved) or human (the person also approves each draft in the web app); omit to keep it.")),
		mcp.WithString("channel_post_mode", mcp.Enum(orgs.ChannelPostAgent, orgs.ChannelPostHuman), mcp.Description("Whether agents' channel posts wait for their person: agent (post at once) or human; omit to keep it.")),
		mcp.WithString("agent_password_login", mcp.Enum(orgs.AgentLoginAllowed, orgs.AgentLoginDisabled), mcp.Description("Whether login takes a password from an agent: allowed or disabled; omit to keep it.")),
		mcp.WithString("approval_factor", mcp.Enum(orgs.FactorSession, orgs.FactorPasskey), mcp.Description("What an approval in the web app needs: session (being signed in) or passkey (also a fresh passkey verification); omit to keep it.")),
		mcp.WithBoolean("require_passkey", mcp.Description("Whether members are asked to add a passkey when they sign in without one; omit to keep it.")),
		mcp.WithString("knowledge_sharing", mcp.Enum(orgs.SharingOff, orgs.SharingAsk, orgs.SharingOn), mcp.Description("Whether answers, once sent, are shared with the org (find_answers, the Knowledge page): off, ask (each person chooses; the default) or on (shared unless the person says no; set by a person in the web app); omit to keep it.")),
		mcp.WithNumber("knowledge_stale_days", mcp.Description("Shared answers older than this many days are marked stale, 0 (never) to 3650 (default 180); omit to keep it.")),
		mcp.WithString("departure_questions", mcp.Enum(orgs.DepartureDecline, orgs.DepartureDelegate), mcp.Description("What becomes of the questions waiting for a member who is removed or deprovisioned: decline (declined to their askers; the default) or delegate (each forwarded to the member's away delegate while that delegate is still a member, the rest declined); omit to keep it.")),
		authTokenParam,
		annotations(false, false, true),
	), func(ctx context.Context, orgID string, in *orgSettingsArgs) (*orgs.Org, error) {
		settings := orgs.Settings{ApprovalMode: in.ApprovalMode, ChannelPostMode: in.ChannelPostMode, AgentPasswordLogin: in.AgentPasswordLogin,
			ApprovalFactor: in.ApprovalFactor, RequirePasskey: in.RequirePasskey, KnowledgeSharing: in.KnowledgeSharing, DepartureQuestions: in.DepartureQuestions}
		if in.KnowledgeStaleDays != nil {
			days, err := intArg("knowledge_stale_days", in.KnowledgeStaleDays, 0, 0, orgs.MaxStaleDays)
			if err != nil {
				return nil, err
			}
			settings.KnowledgeStaleDays = &days
		}
		if setting, value, weakens := settings.Weakening(); weakens {
			return nil, s.personOnly(ctx, fmt.Sprintf("setting %s to %q, which weakens your organization's oversight of agents,", setting, value), links.Admin)
		}
		return s.orgs.SetSettings(ctx, orgID, settings)
	})
}

type removeUserResult struct {
	*orgs.Removal
	QuestionsDeclined  int    `json:"questions_declined" jsonschema:"how many questions still waiting for the member were declined to their askers"`
	QuestionsDelegated int    `json:"questions_delegated" jsonschema:"how many questions still waiting for the member were forwarded to their away delegate (the org's departure_questions is delegate)"`
	Message            string `json:"message"`
}

func (s *Server) registerRemoveUser() {
	addAdminTool(s, mcp.NewTool("remove_user",
		mcp.WithDescription("Org admins only: remove a member from the organization. All their tokens stop working at once; they can no longer log in, be asked or be listed. Questions waiting for them are declined to their askers, or, where the org's departure_questions is delegate, forwarded to their away delegate. Questions they asked stay readable by their recipients, marked as from a former member. Their user id is not given to anyone else later. The last admin cannot be removed."),
		mcp.WithString("org_id", mcp.Required(), mcp.Description("Your organization.")),
		adminPasswordParam,
		mcp.WithString("user_id", mcp.Required(), mcp.Description("The member to remove.")),
		authTokenParam,
		annotations(false, true, true),
	), func(ctx context.Context, orgID string, in *memberArgs) (*removeUserResult, error) {
		touch(ctx, in.UserID)
		r, n, err := s.departs.Leave(ctx, orgID, in.UserID)
		if err != nil {
			return nil, err
		}
		if r == nil {
			// Removed by a concurrent call: this one only declined.
			return nil, auth.NotFoundUser(in.UserID)
		}
		return &removeUserResult{Removal: r, QuestionsDeclined: n.Declined, QuestionsDelegated: n.Delegated,
			Message: "the member is removed and their tokens are revoked; the questions waiting for them are declined to their askers or forwarded to their delegate, as questions_declined and questions_delegated say; their user id stays reserved"}, nil
	})
}

type revokedResult struct {
	UserID        string `json:"user_id"`
	TokensRevoked int    `json:"tokens_revoked" jsonschema:"how many live tokens were revoked"`
	Message       string `json:"message"`
}

// revoked is the result of an admin action that revoked a member's tokens;
// userID passed the domain's check, so it parses.
func revoked(userID string, n int, msg string) *revokedResult {
	id, _ := ctalk.ParseID("user_id", userID)
	return &revokedResult{UserID: id, TokensRevoked: n, Message: msg}
}

func (s *Server) registerRevokeUserTokens() {
	addAdminTool(s, mcp.NewTool("revoke_user_tokens",
		mcp.WithDescription("Org admins only: revoke every token of a member, for example a lost laptop's. They stop working at once; the member can log in again with their password."),
		mcp.WithString("org_id", mcp.Required(), mcp.Description("Your organization.")),
		adminPasswordParam,
		mcp.WithString("user_id", mcp.Required(), mcp.Description("The member whose tokens to revoke.")),
		authTokenParam,
		annotations(false, true, true),
	), func(ctx context.Context, orgID string, in *memberArgs) (*revokedResult, error) {
		touch(ctx, in.UserID)
		n, err := s.auth.RevokeUserTokens(ctx, orgID, in.UserID)
		if err != nil {
			return nil, err
		}
		return revoked(in.UserID, n, "every token of this member is revoked; they can log in again with their password"), nil
	})
}

type resetPasswordArgs struct {
	memberArgs
	NewPassword string `json:"new_password"`
}

func (s *Server) registerResetUserPassword() {
	addAdminTool(s, mcp.NewTool("reset_user_password",
		mcp.WithDescription("Refused to agents: an admin resets a member's password in ctalk's web app, on the member's admin page, after typing their own password again; your own password changes with change_password. Kept so that an agent that calls it learns where the person does it."),
		mcp.WithString("org_id", mcp.Required(), mcp.Description("Your organization.")),
		adminPasswordParam,
		mcp.WithString("user_id", mcp.Required(), mcp.Description("The member whose password to reset.")),
		mcp.WithString("new_password", mcp.Required(), mcp.Description("Their new password, 8 to 72 bytes.")),
		authTokenParam,
		annotations(false, true, true),
	), func(ctx context.Context, orgID string, in *resetPasswordArgs) (*revokedResult, error) {
		u, err := s.orgs.User(ctx, orgID, in.UserID)
		if err != nil {
			return nil, err
		}
		touch(ctx, u.ID)
		return nil, s.personOnly(ctx, "resetting a member's password", func(base string) string { return links.MemberAdmin(base, u.ID) })
	})
}

type changeAdminPasswordArgs struct {
	adminArgs
	NewAdminPassword string `json:"new_admin_password"`
}

type changeAdminPasswordResult struct {
	Changed bool   `json:"changed"`
	Message string `json:"message"`
}

func (s *Server) registerChangeAdminPassword() {
	addAdminTool(s, mcp.NewTool("change_admin_password",
		mcp.WithDescription("Refused to agents: an admin replaces the organization's admin password in ctalk's web app, on the admin page. Kept so that an agent that calls it learns where the person does it."),
		mcp.WithString("org_id", mcp.Required(), mcp.Description("Your organization.")),
		mcp.WithString("admin_password", mcp.Description("The current admin password; may be omitted when you are logged in as an org admin.")),
		mcp.WithString("new_admin_password", mcp.Required(), mcp.Description("The new admin password, 12 to 72 bytes.")),
		authTokenParam,
		annotations(false, true, true),
	), func(ctx context.Context, orgID string, in *changeAdminPasswordArgs) (*changeAdminPasswordResult, error) {
		return nil, s.personOnly(ctx, "changing the organization's admin password", links.Admin)
	})
}

type auditArgs struct {
	adminArgs
	UserID  string   `json:"user_id"`
	Tool    string   `json:"tool"`
	Outcome string   `json:"outcome"`
	Since   string   `json:"since"`
	Until   string   `json:"until"`
	Limit   *float64 `json:"limit"`
	Cursor  string   `json:"cursor"`
	Export  string   `json:"export"`
}

type auditResult struct {
	Events     []audit.Event `json:"events"`
	NextCursor string        `json:"next_cursor,omitempty" jsonschema:"pass as cursor for the next (older) page; absent on the last page"`
	// DownloadURL and NextStep answer an export: the link for a person.
	DownloadURL string `json:"download_url,omitempty" jsonschema:"with export: the web app's download of every event the filters select, oldest first, for an admin to open in their signed-in browser"`
	NextStep    string `json:"next_step,omitempty"`
}

func (s *Server) registerGetAuditLog() {
	addAdminTool(s, mcp.NewTool("get_audit_log",
		mcp.WithDescription("Org admins only: read your organization's audit log, newest first: every tool call with time, user, tool, outcome, duration and the ids it touched (never message text or secrets)."),
		mcp.WithString("org_id", mcp.Required(), mcp.Description("Your organization.")),
		adminPasswordParam,
		mcp.WithString("user_id", mcp.Description("Only calls by this user.")),
		mcp.WithString("tool", mcp.Description("Only calls of this tool.")),
		mcp.WithString("outcome", mcp.Description("Only this outcome: ok, cancelled, invalid, unauthorized, forbidden, not_found, conflict, rate_limited, unavailable or internal.")),
		mcp.WithString("since", mcp.Description("Only calls at or after this RFC 3339 time.")),
		mcp.WithString("until", mcp.Description("Only calls before this RFC 3339 time.")),
		mcp.WithNumber("limit", mcp.Description("Events per page, 1 to 200 (default 50).")),
		mcp.WithString("cursor", mcp.Description("next_cursor of the previous page.")),
		mcp.WithString("export", mcp.Enum(audit.FormatJSONL, audit.FormatCSV), mcp.Description("Instead of a page: download_url, the web app's export of every event the filters select as JSON Lines or CSV, for an admin to open signed in in their browser.")),
		authTokenParam,
		annotations(true, false, true),
	), func(ctx context.Context, orgID string, in *auditArgs) (*auditResult, error) {
		if s.cfg.Audit == nil {
			return nil, ctalk.Errorf(ctalk.EUnavailable, "the audit log is not enabled on this server")
		}
		if in.Export != "" {
			format, err := audit.ParseFormat(in.Export)
			if err != nil {
				return nil, err
			}
			if _, err := (audit.Query{UserID: in.UserID, Tool: in.Tool, Outcome: in.Outcome, Since: in.Since, Until: in.Until}).Filter(); err != nil {
				return nil, err
			}
			return &auditResult{Events: []audit.Event{}, DownloadURL: links.AuditExport(s.publicURLFromContext(ctx), format,
				map[string]string{"user_id": in.UserID, "tool": in.Tool, "outcome": in.Outcome, "since": in.Since, "until": in.Until}),
				NextStep: "give download_url to your person: it downloads the export in their browser, signed in as an admin of the organization, and the download is recorded in the audit log"}, nil
		}
		limit, err := intArg("limit", in.Limit, audit.DefaultLimit, 1, audit.MaxLimit)
		if err != nil {
			return nil, err
		}
		page, err := s.cfg.Audit.Query(ctx, orgID, audit.Query{UserID: in.UserID, Tool: in.Tool, Outcome: in.Outcome,
			Since: in.Since, Until: in.Until, Limit: limit, Cursor: in.Cursor})
		if err != nil {
			return nil, err
		}
		return &auditResult{Events: page.Events, NextCursor: page.NextCursor}, nil
	})
}

type inviteUserArgs struct {
	adminArgs
	Email  string `json:"email"`
	UserID string `json:"user_id"`
	Name   string `json:"name"`
	Role   string `json:"role"`
}

// inviteResult is an invite as sent: never its link, which goes only by
// mail to the invitee.
type inviteResult struct {
	*auth.Invite
	NextStep string `json:"next_step"`
}

func (s *Server) registerInviteUser() {
	addAdminTool(s, mcp.NewTool("invite_user",
		mcp.WithDescription("Invite a person to an organization by email: they get a link, valid once for 7 days, where they choose their own password and are signed in. Needs the org's admin_password, or the token of an org admin, and a server that sends email; otherwise use register_user."),
		mcp.WithString("org_id", mcp.Required(), mcp.Description("The organization to invite the person to.")),
		adminPasswordParam,
		mcp.WithString("email", mcp.Required(), mcp.Description("The address the invite is mailed to, such as jane@example.com.")),
		mcp.WithString("user_id", mcp.Required(), mcp.Description("The user id they will sign in with: 1-64 of a-z, 0-9, '-', '_'.")),
		mcp.WithString("name", mcp.Required(), mcp.Description("The person's display name.")),
		mcp.WithString("role", mcp.Enum(orgs.RoleMember, orgs.RoleAdmin), mcp.Description("member (the default); an admin is invited by an admin in the web app, not by an agent.")),
		authTokenParam,
		annotations(false, false, false),
	), func(ctx context.Context, orgID string, in *inviteUserArgs) (*inviteResult, error) {
		if in.Role == orgs.RoleAdmin {
			// An agent could invite an address it reads and so make
			// itself an admin: only a person makes admins.
			return nil, s.personOnly(ctx, "inviting an admin", links.Admin)
		}
		by := ""
		if c, ok := ctx.Value(callKey).(*call); ok && c.userID != adminPasswordCaller {
			by = c.userID
		}
		inv, err := s.access.Invite(ctx, ctalk.Caller{OrgID: orgID, UserID: by}, orgs.NewInvite{Email: in.Email, UserID: in.UserID, Name: in.Name, Role: in.Role})
		if err != nil {
			return nil, err
		}
		touch(ctx, inv.UserID)
		return &inviteResult{Invite: inv, NextStep: fmt.Sprintf("the invite is mailed to %s; its link works once, until %s. Pending invites are listed on the web app's admin page, where they can be resent or revoked.",
			inv.Email, inv.ExpiresAt.UTC().Format(time.RFC3339))}, nil
	})
}

type exportOrgArgs struct {
	adminArgs
}

type exportOrgResult struct {
	DownloadURL string `json:"download_url" jsonschema:"the web app's download of the organization's data, for an admin to open in their signed-in browser and press Download; the link carries no credential"`
	NextStep    string `json:"next_step"`
}

func (s *Server) registerExportOrg() {
	addAdminTool(s, mcp.NewTool("export_org",
		mcp.WithDescription("Org admins only: a link to download all of your organization's data (members, questions with their drafts, shared answers, channels and messages, settings; docs/data.md) as a zip, for your person to open in their browser signed in as an admin. The archive is never returned to the agent."),
		mcp.WithString("org_id", mcp.Required(), mcp.Description("Your organization.")),
		adminPasswordParam,
		authTokenParam,
		annotations(true, false, true),
	), func(ctx context.Context, orgID string, in *exportOrgArgs) (*exportOrgResult, error) {
		return &exportOrgResult{DownloadURL: links.OrgExport(s.publicURLFromContext(ctx)),
			NextStep: "give download_url to your person: signed in as an admin of the organization, they press Download there, and the download is recorded in the audit log"}, nil
	})
}
