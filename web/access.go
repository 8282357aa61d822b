package web

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/orgs"
)

// mountAccess adds the pages that mailed links open, and "forgot password":
// none needs a session, and none shows a link's token or puts one in a log
// (routes are logged by pattern).
func (p *Pages) mountAccess(e *echo.Echo, mw []echo.MiddlewareFunc) {
	e.GET("/invite/:token", p.invitePage, mw...)
	e.POST("/invite/:token", p.acceptInvite, mw...)
	e.GET("/forgot", p.forgotPage, mw...)
	e.POST("/forgot", p.forgotSubmit, mw...)
	e.GET("/reset/:token", p.resetPage, mw...)
	e.POST("/reset/:token", p.resetSubmit, mw...)
	e.GET("/passkeys/confirm/:token", p.passkeyConfirmPage, mw...)
	e.POST("/passkeys/confirm/:token", p.passkeyConfirmSubmit, mw...)
}

// passkeyConfirmData is the page a passkey's confirmation link opens.
type passkeyConfirmData struct {
	CSRF    string
	Passkey *auth.PendingPasskey
}

// passkeyConfirmPage shows the passkey that the mailed link confirms, with
// the button that confirms it: opening the link (as a mail scanner may)
// confirms nothing.
func (p *Pages) passkeyConfirmPage(c echo.Context) error {
	pk, err := p.auth.PasskeyByLink(c.Request().Context(), c.Param("token"))
	if err != nil {
		return p.linkGone(c, "This link confirms no passkey", err)
	}
	return p.render(c, http.StatusOK, "passkey-confirm", &page{Title: "Confirm your new passkey", Data: &passkeyConfirmData{CSRF: csrfToken(c), Passkey: pk}})
}

// passkeyConfirmSubmit confirms the passkey of the mailed link, which from
// then on signs in and verifies.
func (p *Pages) passkeyConfirmSubmit(c echo.Context) error {
	if _, err := p.auth.ConfirmPasskey(c.Request().Context(), c.Param("token")); err != nil {
		return p.linkGone(c, "This link confirms no passkey", err)
	}
	return p.render(c, http.StatusOK, "message", &page{Title: "Passkey confirmed",
		Message: "Your passkey is confirmed: it signs you in, and proves it is you where your organization asks for a passkey before an approval.", Next: "/signin"})
}

// mountInvites adds the admin's invite forms.
func (p *Pages) mountInvites(r routes) {
	r.POST("/admin/invites", p.inviteSubmit)
	r.POST("/admin/invites/:user_id/resend", p.resendInvite)
	r.POST("/admin/invites/:user_id/revoke", p.revokeInvite)
	r.POST("/admin/members/:user_id/email", p.setMemberEmail)
}

// accessData is a page a mailed link opens, or the forgot-password form.
type accessData struct {
	CSRF    string
	Invite  *auth.Invite
	OrgID   string
	UserID  string
	Who     string
	Errors  map[string]string
	Sent    bool
	Minutes int
	Enabled bool
}

// linkGone renders the page of a link that does not work.
func (p *Pages) linkGone(c echo.Context, title string, err error) error {
	if ctalk.ErrorCode(err) == ctalk.EInternal {
		return err
	}
	return p.render(c, ctalk.HTTPStatus(ctalk.ErrorCode(err)), "message", &page{Title: title, Message: ctalk.ErrorMessage(err), Next: "/signin"})
}

func (p *Pages) invitePage(c echo.Context) error {
	inv, err := p.auth.InviteByLink(c.Request().Context(), c.Param("token"))
	if err == nil {
		// The page acts in the invite's org (see ctalk.WithOrg).
		c.SetRequest(c.Request().WithContext(ctalk.WithOrg(c.Request().Context(), inv.OrgID)))
	}
	if err != nil {
		return p.linkGone(c, "This invite does not work", err)
	}
	return p.renderInvite(c, http.StatusOK, inv, nil)
}

func (p *Pages) renderInvite(c echo.Context, status int, inv *auth.Invite, errs map[string]string) error {
	org, err := p.orgs.Org(c.Request().Context(), inv.OrgID)
	if err != nil {
		return err
	}
	return p.render(c, status, "invite", &page{Title: "Join " + org.Name + " on ctalk", Data: &accessData{CSRF: csrfToken(c), Invite: inv, Errors: errs}})
}

// acceptInvite creates the invited member with the password they chose and
// signs them in on this browser.
func (p *Pages) acceptInvite(c echo.Context) error {
	ctx, raw := c.Request().Context(), c.Param("token")
	inv, err := p.auth.InviteByLink(ctx, raw)
	if err != nil {
		return p.linkGone(c, "This invite does not work", err)
	}
	// The rest acts in the invite's org (see ctalk.WithOrg).
	ctx = ctalk.WithOrg(ctx, inv.OrgID)
	c.SetRequest(c.Request().WithContext(ctx))
	if c.FormValue("password") != c.FormValue("confirm") {
		return p.renderInvite(c, http.StatusBadRequest, inv, map[string]string{"password": "the two passwords differ; type the same password twice"})
	}
	u, err := p.orgs.AcceptInvite(ctx, raw, c.FormValue("password"))
	switch ctalk.ErrorCode(err) {
	case "":
	case ctalk.EInvalid:
		return p.renderInvite(c, http.StatusBadRequest, inv, map[string]string{"password": ctalk.ErrorMessage(err)})
	default:
		return p.linkGone(c, "This invite does not work", err)
	}
	sess := &auth.Session{OrgID: u.OrgID, UserID: u.ID, Role: u.Role}
	if refused := p.passwordSessionRefused(c, sess, "You joined"); refused != nil {
		return refused
	}
	cookie, err := p.auth.StartWebSession(ctx, sess)
	if err != nil {
		return err
	}
	p.setSession(c, cookie)
	return c.Redirect(http.StatusSeeOther, "/inbox")
}

func (p *Pages) forgotPage(c echo.Context) error {
	return p.renderForgot(c, http.StatusOK, &accessData{OrgID: c.QueryParam("org_id")})
}

func (p *Pages) renderForgot(c echo.Context, status int, d *accessData) error {
	d.CSRF, d.Enabled, d.Minutes = csrfToken(c), p.access.Enabled(), int(auth.ResetTTL.Minutes())
	return p.render(c, status, "forgot", &page{Title: "Forgot your password?", Data: d})
}

// forgotSubmit asks for a reset link. The page answers the same whether or
// not the account exists; only input errors and the limits, which hold for
// every account alike, are told.
func (p *Pages) forgotSubmit(c echo.Context) error {
	d := &accessData{OrgID: c.FormValue("org_id"), Who: c.FormValue("who")}
	// It acts in the org the person typed (see ctalk.WithOrg).
	ctx := auth.WithClientAddr(ctalk.WithTypedOrg(c.Request().Context(), d.OrgID), c.RealIP())
	err := p.access.ForgotPassword(ctx, d.OrgID, d.Who)
	switch code := ctalk.ErrorCode(err); code {
	case "":
		d.Sent = true
		return p.renderForgot(c, http.StatusOK, d)
	case ctalk.EInternal:
		return err
	default:
		// The error of an input names its field first.
		field := "form"
		if code == ctalk.EInvalid {
			field = "who"
			if strings.HasPrefix(ctalk.ErrorMessage(err), "org_id") {
				field = "org_id"
			}
		}
		d.Errors = map[string]string{field: ctalk.ErrorMessage(err)}
		return p.renderForgot(c, ctalk.HTTPStatus(code), d)
	}
}

func (p *Pages) resetPage(c echo.Context) error {
	orgID, userID, err := p.auth.ResetByLink(c.Request().Context(), c.Param("token"))
	if err != nil {
		return p.linkGone(c, "This reset link does not work", err)
	}
	return p.render(c, http.StatusOK, "reset", &page{Title: "Choose a new password", Data: &accessData{CSRF: csrfToken(c), OrgID: orgID, UserID: userID}})
}

// resetSubmit sets the new password through the link, which ends every
// session and token of the person, and signs them in on this browser.
func (p *Pages) resetSubmit(c echo.Context) error {
	ctx, raw := c.Request().Context(), c.Param("token")
	orgID, userID, err := p.auth.ResetByLink(ctx, raw)
	if err != nil {
		return p.linkGone(c, "This reset link does not work", err)
	}
	// The rest acts in the link's org (see ctalk.WithOrg).
	ctx = ctalk.WithOrg(ctx, orgID)
	c.SetRequest(c.Request().WithContext(ctx))
	again := func(msg string) error {
		return p.render(c, http.StatusBadRequest, "reset", &page{Title: "Choose a new password",
			Data: &accessData{CSRF: csrfToken(c), OrgID: orgID, UserID: userID, Errors: map[string]string{"password": msg}}})
	}
	if c.FormValue("password") != c.FormValue("confirm") {
		return again("the two passwords differ; type the same password twice")
	}
	sess, _, err := p.auth.UseReset(ctx, raw, c.FormValue("password"))
	switch ctalk.ErrorCode(err) {
	case "":
	case ctalk.EInvalid:
		return again(ctalk.ErrorMessage(err))
	default:
		return p.linkGone(c, "This reset link does not work", err)
	}
	if refused := p.passwordSessionRefused(c, sess, "Your password is changed"); refused != nil {
		return refused
	}
	cookie, err := p.auth.StartWebSession(ctx, sess)
	if err != nil {
		return err
	}
	p.setSession(c, cookie)
	return done(c, "/profile", "reset")
}

// inviteForm is the invite form as sent.
type inviteForm struct {
	Email, ID, Name, Role, Error string
}

// inviteLink is an invite link made for the admin to hand over: the page
// that made it shows it this once.
type inviteLink struct {
	Invite *auth.Invite
	URL    string
}

// byLink reports whether an invite form asks for a link to hand over
// rather than a mail: its "deliver" button says so, and a server that
// sends no email makes links only.
func (p *Pages) byLink(c echo.Context) bool {
	return c.FormValue("deliver") == "link" || !p.access.Enabled()
}

func (p *Pages) inviteSubmit(c echo.Context) error {
	start, ctx := time.Now(), c.Request().Context()
	f := inviteForm{Email: c.FormValue("email"), ID: c.FormValue("user_id"), Name: c.FormValue("name"), Role: c.FormValue("role")}
	in := orgs.NewInvite{Email: f.Email, UserID: f.ID, Name: f.Name, Role: f.Role}
	var (
		inv  *auth.Invite
		link string
		err  error
	)
	if p.byLink(c) {
		inv, link, err = p.access.InviteLink(ctx, me(c).Caller(), in)
	} else {
		inv, err = p.access.Invite(ctx, me(c).Caller(), in)
	}
	var ids []string
	if inv != nil {
		ids = append(ids, inv.UserID)
	}
	p.recordAction(c, "web:invite_user", start, err, ids...)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			f.Error = msg
			return p.admin(c, status, &adminData{Add: memberForm{Role: orgs.RoleMember}, Invite: f}, "")
		})
	}
	if link != "" {
		return p.showInviteLink(c, inv, link)
	}
	return done(c, "/admin#invites", "invited")
}

// showInviteLink answers the making of an invite link with the admin page
// showing it, this once: it is in no redirect, log or audit record.
func (p *Pages) showInviteLink(c echo.Context, inv *auth.Invite, link string) error {
	return p.admin(c, http.StatusOK, &adminData{Add: memberForm{Role: orgs.RoleMember}, Invite: inviteForm{Role: orgs.RoleMember}, Link: &inviteLink{Invite: inv, URL: link}}, "")
}

// inviteAction runs an action on the invite named in the path, records
// it, and returns to the admin page with what happened, or with why not
// next to the invites. An action that makes a link shows it instead.
func (p *Pages) inviteAction(c echo.Context, tool, what string, act func(userID string) (*inviteLink, error)) error {
	start, userID := time.Now(), c.Param("user_id")
	link, err := act(userID)
	var ids []string
	if ctalk.IsID(userID) && ctalk.ErrorCode(err) != ctalk.ENotFound {
		ids = append(ids, userID)
	}
	p.recordAction(c, tool, start, err, ids...)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			return p.admin(c, status, &adminData{Add: memberForm{Role: orgs.RoleMember}, Invite: inviteForm{Role: orgs.RoleMember}, InvitesError: msg}, "")
		})
	}
	if link != nil {
		return p.showInviteLink(c, link.Invite, link.URL)
	}
	return done(c, "/admin#invites", what)
}

// resendInvite mails the invite again with a new link, or makes the new
// link for the admin to hand over.
func (p *Pages) resendInvite(c echo.Context) error {
	return p.inviteAction(c, "web:resend_invite", "resent", func(userID string) (*inviteLink, error) {
		if p.byLink(c) {
			inv, url, err := p.access.RenewLink(c.Request().Context(), me(c).Caller(), userID)
			if err != nil {
				return nil, err
			}
			return &inviteLink{Invite: inv, URL: url}, nil
		}
		_, err := p.access.Resend(c.Request().Context(), me(c).Caller(), userID)
		return nil, err
	})
}

func (p *Pages) revokeInvite(c echo.Context) error {
	return p.inviteAction(c, "web:revoke_invite", "revoked-invite", func(userID string) (*inviteLink, error) {
		return nil, p.auth.RevokeInvite(c.Request().Context(), me(c).OrgID, userID)
	})
}

// setMemberEmail sets a member's address, where their reset links go,
// under the rules of an admin's password reset: the admin verifies afresh
// (reverify: their passkey where the org's approval_factor is passkey,
// else their own password typed again), changes no address of their own
// here, and the member is told at the address replaced. Under the passkey
// factor the member's passkeys stay theirs: a new one needs one of them,
// or confirmation.
func (p *Pages) setMemberEmail(c echo.Context) error {
	m := me(c)
	if _, err := p.orgs.User(c.Request().Context(), m.OrgID, c.Param("user_id")); err != nil {
		return p.adminNotFound(c, err)
	}
	if target, err := ctalk.ParseID("user_id", c.Param("user_id")); err == nil && target != m.UserID {
		if askPasskey, err := p.reverify(c, c.FormValue("your_password")); askPasskey && err == nil {
			return p.stepUp(c, http.StatusUnauthorized, "Your organization asks for a passkey before an approval, so changing a member's email address, where their reset links go, takes a passkey verification of yours. Nothing was changed yet: verify with your passkey, and the address is saved.",
				c.Request().URL.Path, replayed(c), "")
		}
	}
	return p.memberAction(c, "web:set_user_email", "email", "email", func(userID string) error {
		ctx := c.Request().Context()
		if target, err := ctalk.ParseID("user_id", userID); err == nil && target == m.UserID {
			return ctalk.Errorf(ctalk.EForbidden, "this changes another member's address; change your own on your profile page (/profile)")
		}
		askPasskey, err := p.reverify(c, c.FormValue("your_password"))
		if askPasskey {
			return ctalk.Errorf(ctalk.EForbidden, "your organization now asks for a passkey before an approval; changing a member's address needs a passkey verification of yours, so save it again")
		}
		if err != nil {
			if ctalk.ErrorCode(err) == ctalk.EUnauthorized {
				return ctalk.Errorf(ctalk.EUnauthorized, "your own password is not right; type the password you sign in with to confirm the change")
			}
			return err
		}
		if _, err = p.access.ChangeEmail(ctx, m.OrgID, userID, c.FormValue("email"), m.UserID); err == nil {
			p.tellSecurity(ctx, m.OrgID, userID, fmt.Sprintf("An admin (%s) changed the email address where your password reset links go.", m.UserID))
		}
		return err
	})
}

// forgotURL is the "forgot password" link of the sign-in pages, or "" on a
// server that sends no email.
func (p *Pages) forgotURL() string {
	if p.access == nil || !p.access.Enabled() {
		return ""
	}
	return "/forgot"
}

// localSignIn signs the browser in as the member of a local store whom the
// link's token names (ctalk serve --local prints it), and opens the inbox.
// Every other server answers 404, as for a route it does not have.
func (p *Pages) localSignIn(c echo.Context) error {
	if p.cfg.LocalSignIn == nil {
		return echo.ErrNotFound
	}
	orgID, userID, ok := p.cfg.LocalSignIn(c.Param("token"))
	if !ok {
		return p.render(c, http.StatusNotFound, "message", &page{Title: "This link signs nobody in",
			Message: "It is not the link this local server printed when it started. Copy the link from the terminal where ctalk serve --local runs.", Next: "/"})
	}
	ctx := c.Request().Context()
	u, err := p.orgs.User(ctx, orgID, userID)
	if err != nil {
		return err
	}
	cookie, err := p.auth.StartWebSession(ctx, &auth.Session{OrgID: u.OrgID, UserID: u.ID, Role: u.Role})
	if err != nil {
		return err
	}
	p.setSession(c, cookie)
	return c.Redirect(http.StatusSeeOther, "/inbox")
}
