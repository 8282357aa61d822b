package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/orgs"
)

// mountAdmin adds the routes of the app's admin section: members,
// organization settings and the audit log (admins only). Every action is
// taken with the admin's own session, in the admin's org, and recorded in
// the audit log as "web:" and the action, as the MCP tools' calls are.
func (p *Pages) mountAdmin(r routes) {
	r.GET("/admin", p.adminPage)
	r.POST("/admin/members", p.addMember)
	r.GET("/admin/members/:user_id", p.memberPage)
	r.POST("/admin/members/:user_id/role", p.setRole)
	r.POST("/admin/members/:user_id/password", p.resetPassword)
	r.POST("/admin/members/:user_id/revoke", p.revokeMemberTokens)
	r.POST("/admin/members/:user_id/passkeys/:passkey_id/approve", p.approvePasskey)
	r.GET("/admin/members/:user_id/remove", p.removeMemberPage)
	r.POST("/admin/members/:user_id/remove", p.removeMember)
	r.POST("/admin/settings", p.updateSettings)
	r.POST("/admin/password", p.changeAdminPassword)
	r.GET("/admin/audit", p.auditPage)
	r.GET("/admin/audit/export", p.exportAudit)
	r.GET("/admin/audit/verify", p.verifyAudit)
	r.POST("/admin/audit/retention", p.setAuditRetention)
	r.POST("/admin/audit/stream", p.setAuditStream)
	r.POST("/admin/audit/stream/test", p.testAuditStream)
	r.POST("/admin/audit/stream/off", p.stopAuditStream)
	p.mountOverview(r)
	p.mountGlossary(r)
	p.mountDeletion(r)
}

// adminData is the admin page: the org, its members, and the forms with
// what was sent and why it was refused.
type adminData struct {
	CSRF string
	// SCIM says whether the SCIM page is served, to link to it.
	SCIM    bool
	Org     *orgs.Org
	Members []*orgs.User
	Add     memberForm
	// Invites wait for their invitees; Invite is the invite form as sent,
	// InvitesError why an action on an invite was refused. MailEnabled
	// says whether this server sends email at all, LinksEnabled whether
	// it can make invite links to hand over. Link is the invite link just
	// made, shown this once.
	Invites      []*auth.Invite
	Invite       inviteForm
	InvitesError string
	MailEnabled  bool
	LinksEnabled bool
	Link         *inviteLink
	// Errors of the settings and admin password forms.
	SettingsError, PasswordError string
	// Deletion is the org's scheduled deletion, nil for none; DeleteError
	// why scheduling or cancelling it was refused; AskPassword whether
	// scheduling it asks for the admin's password (else a passkey).
	Deletion    *orgs.Deletion
	DeleteError string
	AskPassword bool
}

// memberForm is the add-a-member form as sent, password left out.
type memberForm struct {
	ID, Name, Role, Ownership, Email, Error string
}

var adminFlash = map[string]string{
	"added":              "Member added. Give them their password privately; they sign in at this site.",
	"removed":            "Member removed. Their browser sessions and tokens stopped working at once.",
	"settings":           "Settings saved.",
	"password":           "The organization's admin password is changed; the old one no longer works.",
	"invited":            "Invite sent. Its link works once, for 7 days; they choose their own password.",
	"resent":             "Invite sent again with a new link; the earlier link no longer works.",
	"revoked-invite":     "Invite revoked; its link no longer works.",
	"deletion":           "The organization's deletion is scheduled. Members were told; their sign-ins and agents' tokens stopped.",
	"deletion-cancelled": "The deletion is cancelled. Members may sign in again, and their agents' tokens work again.",
}

func (p *Pages) adminPage(c echo.Context) error {
	return p.admin(c, http.StatusOK, &adminData{Add: memberForm{Role: orgs.RoleMember}, Invite: inviteForm{Role: orgs.RoleMember}}, flash(c, adminFlash))
}

// admin renders the admin page around d.
func (p *Pages) admin(c echo.Context, status int, d *adminData, flashed string) error {
	ctx, m := c.Request().Context(), me(c)
	var err error
	if d.Org, err = p.orgs.Org(ctx, m.OrgID); err != nil {
		return err
	}
	if d.Members, err = p.orgs.Users(ctx, m.OrgID); err != nil {
		return err
	}
	if d.Invites, err = p.auth.Invites(ctx, m.OrgID); err != nil {
		return err
	}
	d.MailEnabled, d.LinksEnabled = p.access.Enabled(), p.access.LinksEnabled()
	if d.Deletion, err = p.orgs.ScheduledDeletion(ctx, m.OrgID); err != nil {
		return err
	}
	keys, err := p.auth.Passkeys(ctx, m.OrgID, m.UserID)
	if err != nil {
		return err
	}
	d.AskPassword = !d.Org.AsksForPasskeys() && len(keys) == 0
	if d.Invite.Role == "" {
		d.Invite.Role = orgs.RoleMember
	}
	d.CSRF, d.SCIM = csrfToken(c), p.scim != nil
	return p.app(c, status, "admin", &page{Section: "admin", Title: "Admin · " + d.Org.Name, Data: d, Flash: flashed})
}

// refused re-renders a page with a refusal's message, or returns an
// internal error for the server to log.
func adminRefused(err error, show func(status int, msg string) error) error {
	if ctalk.ErrorCode(err) == ctalk.EInternal {
		return err
	}
	return show(ctalk.HTTPStatus(ctalk.ErrorCode(err)), ctalk.ErrorMessage(err))
}

func (p *Pages) addMember(c echo.Context) error {
	start := time.Now()
	f := memberForm{ID: c.FormValue("user_id"), Name: c.FormValue("name"), Role: c.FormValue("role"), Ownership: c.FormValue("ownership"), Email: c.FormValue("email")}
	u, err := p.orgs.AddUser(c.Request().Context(), me(c).OrgID, orgs.NewUser{ID: f.ID, Name: f.Name, Password: c.FormValue("password"),
		Role: f.Role, Ownership: orgs.SplitOwnership(f.Ownership), Email: f.Email})
	var added []string
	if u != nil {
		added = append(added, u.ID)
	}
	p.recordAction(c, "web:register_user", start, err, added...)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			f.Error = msg
			return p.admin(c, status, &adminData{Add: f}, "")
		})
	}
	return done(c, "/admin", "added")
}

// updateSettings saves the org's settings. In an org that asks for
// passkeys (orgs.Org.AsksForPasskeys), changing a setting to a value that
// weakens oversight (orgs' one table of them, which the MCP tools' refusals
// use too) needs a fresh passkey verification of the admin's, as an
// approval does, asked for on the spot: else anyone who knows an admin's
// password could switch approval off. The form sends every setting; the
// weakening values the org holds already are not written again.
func (p *Pages) updateSettings(c echo.Context) error {
	start, ctx, m := time.Now(), c.Request().Context(), me(c)
	in := orgs.Settings{ApprovalMode: c.FormValue("approval_mode"), ChannelPostMode: c.FormValue("channel_post_mode"),
		ApprovalFactor: c.FormValue("approval_factor"), AgentPasswordLogin: c.FormValue("agent_password_login")}
	switch c.FormValue("require_passkey") {
	case "on":
		in.RequirePasskey = ptr(true)
	case "off":
		in.RequirePasskey = ptr(false)
	}
	in.KnowledgeSharing, in.DepartureQuestions = c.FormValue("knowledge_sharing"), c.FormValue("departure_questions")
	if raw := strings.TrimSpace(c.FormValue("knowledge_stale_days")); raw != "" {
		days, convErr := strconv.Atoi(raw)
		if convErr != nil {
			days = -1 // SetSettings says what is allowed.
		}
		in.KnowledgeStaleDays = &days
	}
	org, err := p.orgs.Org(ctx, m.OrgID)
	if err != nil {
		return err
	}
	in = in.Against(org)
	if setting, value, weakens := in.Weakening(); weakens {
		if org.AsksForPasskeys() && !m.PasskeyVerifiedRecently(time.Now()) {
			return p.stepUp(c, http.StatusUnauthorized, "Your organization asks for passkeys, and setting "+setting+" to "+value+" weakens what people oversee: it takes a passkey verification of yours. Nothing was changed yet: verify with your passkey, and the settings are saved.",
				c.Request().URL.Path, replayed(c), "")
		}
		// Let through without a passkey: only while the org asks for none.
		in.UnlessPasskeysAsked = !org.AsksForPasskeys()
	}
	_, err = p.orgs.SetSettings(ctx, m.OrgID, in)
	p.recordAction(c, "web:update_org_settings", start, err)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			return p.admin(c, status, &adminData{Add: memberForm{Role: orgs.RoleMember}, SettingsError: msg}, "")
		})
	}
	return done(c, "/admin", "settings")
}

func (p *Pages) changeAdminPassword(c echo.Context) error {
	start := time.Now()
	var err error = ctalk.Errorf(ctalk.EInvalid, "the two passwords differ; type the same new password twice")
	if c.FormValue("new_admin_password") == c.FormValue("confirm") {
		err = p.auth.ChangeAdminPassword(c.Request().Context(), me(c).OrgID, c.FormValue("new_admin_password"))
	}
	p.recordAction(c, "web:change_admin_password", start, err)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			return p.admin(c, status, &adminData{Add: memberForm{Role: orgs.RoleMember}, PasswordError: msg}, "")
		})
	}
	return done(c, "/admin", "password")
}

// memberPath is the admin page of one member.

func ptr[T any](v T) *T { return &v }
