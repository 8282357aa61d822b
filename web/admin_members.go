package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/access"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/links"
	"github.com/ctalk/ctalk/orgs"
)

// memberData is the admin page of one member, with the error of the form
// that was refused (Form names it).
type memberData struct {
	CSRF        string
	User        *orgs.User
	Self        bool
	Form, Error string
	// Confirmed is the value the removal's confirmation form sends.
	Confirmed string
	// Passkeys are the member's; PasskeyFactor says whether the org's
	// approval_factor is passkey (changing the address then asks for the
	// admin's passkey rather than their password).
	Passkeys      []auth.Passkey
	PasskeyFactor bool
}

var memberFlash = map[string]string{
	"role":     "Role changed. It holds from their next page or call.",
	"passkey":  "Passkey approved. It signs them in and verifies their approvals from now on; they were told by mail.",
	"password": "Password reset. Every session and token of theirs stopped working; give them the new password privately.",
	"revoked":  "Every session and token of theirs stopped working. They can sign in again with their password.",
	"email":    "Email address saved. The address it replaced was told.",
}

func (p *Pages) memberPage(c echo.Context) error {
	return p.member(c, http.StatusOK, &memberData{}, flash(c, memberFlash))
}

// member renders the page of the member named in the path around d; a
// member of no org of mine is not found.
func (p *Pages) member(c echo.Context, status int, d *memberData, flashed string) error {
	u, err := p.orgs.User(c.Request().Context(), me(c).OrgID, c.Param("user_id"))
	if err != nil {
		return p.adminNotFound(c, err)
	}
	d.User, d.Self = u, u.ID == me(c).UserID
	d.CSRF = csrfToken(c)
	if d.Passkeys, err = p.auth.Passkeys(c.Request().Context(), u.OrgID, u.ID); err != nil {
		return err
	}
	org, err := p.orgs.Org(c.Request().Context(), u.OrgID)
	if err != nil {
		return err
	}
	d.PasskeyFactor = org.ApprovalFactor == orgs.FactorPasskey
	return p.app(c, status, "admin-member", &page{Section: "admin", Title: u.Name + " · Admin", Data: d, Flash: flashed})
}

// notFound renders a refusal as a page of its own (such as a member that
// is not, or no longer, in my org).
func (p *Pages) adminNotFound(c echo.Context, err error) error {
	if ctalk.ErrorCode(err) == ctalk.EInternal {
		return err
	}
	return p.render(c, ctalk.HTTPStatus(ctalk.ErrorCode(err)), "message", &page{Me: me(c), Section: "admin", Title: "Not found",
		Message: ctalk.ErrorMessage(err), Back: "/admin"})
}

// memberAction runs an admin action on the member named in the path,
// records it, and redirects to the member's page with what happened, or
// shows the page again with the refusal next to form.
func (p *Pages) memberAction(c echo.Context, tool, form, what string, act func(userID string) error) error {
	return p.memberActionTo(c, tool, form, links.MemberAdmin("", c.Param("user_id")), what, act)
}

// memberActionTo is memberAction that redirects to next.
func (p *Pages) memberActionTo(c echo.Context, tool, form, next, what string, act func(userID string) error) error {
	start := time.Now()
	userID := c.Param("user_id")
	err := act(userID)
	var touched []string
	if ctalk.ErrorCode(err) != ctalk.ENotFound && ctalk.ErrorCode(err) != ctalk.EInvalid {
		touched = append(touched, userID)
	}
	p.recordAction(c, tool, start, err, touched...)
	if err != nil {
		if code := ctalk.ErrorCode(err); code == ctalk.ENotFound {
			return p.adminNotFound(c, err)
		}
		return adminRefused(err, func(status int, msg string) error {
			return p.member(c, status, &memberData{Form: form, Error: msg}, "")
		})
	}
	return done(c, next, what)
}

func (p *Pages) setRole(c echo.Context) error {
	m, role := me(c), c.FormValue("role")
	next, what := links.MemberAdmin("", c.Param("user_id")), "role"
	if c.Param("user_id") == m.UserID && role != orgs.RoleAdmin {
		// An admin who made themselves a member has no admin pages any more.
		next, what = "/inbox", ""
	}
	return p.memberActionTo(c, "web:set_user_role", "role", next, what, func(userID string) error {
		_, err := p.orgs.SetRole(c.Request().Context(), m.OrgID, userID, role)
		return err
	})
}

// resetPassword sets a member's password once the admin has typed their
// own password again: a browser left signed in, or an agent that holds the
// admin's session, cannot take over a member's account with it. An admin's
// own password is changed on their profile page, with the current one.
func (p *Pages) resetPassword(c echo.Context) error {
	return p.memberAction(c, "web:reset_user_password", "password", "password", func(userID string) error {
		ctx, m := c.Request().Context(), me(c)
		if target, err := ctalk.ParseID("user_id", userID); err == nil && target == m.UserID {
			return ctalk.Errorf(ctalk.EForbidden, "this resets another member's password; change your own on your profile page (/profile), with your current password")
		}
		if c.FormValue("new_password") != c.FormValue("confirm") {
			return ctalk.Errorf(ctalk.EInvalid, "the two passwords differ; type the same new password twice")
		}
		if _, err := p.orgs.User(ctx, m.OrgID, userID); err != nil {
			return err
		}
		if _, err := p.auth.CheckPassword(ctx, m.OrgID, m.UserID, c.FormValue("your_password"), c.RealIP()); err != nil {
			if ctalk.ErrorCode(err) == ctalk.EUnauthorized {
				return ctalk.Errorf(ctalk.EUnauthorized, "your own password is not right; type the password you sign in with to confirm the reset")
			}
			return err
		}
		if _, err := p.auth.ResetPassword(ctx, m.OrgID, userID, c.FormValue("new_password")); err != nil {
			return err
		}
		// The member learns of it, by mail where they have an address.
		if p.access != nil {
			p.access.TellReset(ctx, m.OrgID, userID, m.UserID)
		}
		return nil
	})
}

// approvePasskey confirms a member's passkey that waits for confirmation
// (their first, where the org's approval_factor is passkey), once the admin
// has verified with their own passkey in the last few minutes, asked for
// on the spot; the member is told.
func (p *Pages) approvePasskey(c echo.Context) error {
	m := me(c)
	if _, err := p.orgs.User(c.Request().Context(), m.OrgID, c.Param("user_id")); err != nil {
		return p.adminNotFound(c, err)
	}
	if !m.PasskeyVerifiedRecently(time.Now()) {
		return p.stepUp(c, http.StatusUnauthorized, "Approving a member's passkey lets it approve for them: it takes a passkey verification of yours. Nothing was changed yet: verify with your passkey, and the approval is sent.",
			c.Request().URL.Path, replayed(c), "")
	}
	return p.memberAction(c, "web:approve_passkey", "passkeys", "passkey", func(userID string) error {
		ctx := c.Request().Context()
		pk, err := p.auth.ApprovePasskey(ctx, m, userID, c.Param("passkey_id"))
		if err == nil {
			p.tellPasskey(ctx, m.OrgID, userID, pk.Name, access.PasskeyApproved, m.UserID)
		}
		return err
	})
}

func (p *Pages) revokeMemberTokens(c echo.Context) error {
	return p.memberAction(c, "web:revoke_user_tokens", "revoke", "revoked", func(userID string) error {
		_, err := p.auth.RevokeUserTokens(c.Request().Context(), me(c).OrgID, userID)
		return err
	})
}

// removeConfirmed is the value of the confirmation page's field
// "confirmed": only a post that carries it removes a member.
const removeConfirmed = "yes"

// removeMemberPage asks the admin to confirm the removal of a member, which
// cannot be undone: the page says what it does and posts the removal.
func (p *Pages) removeMemberPage(c echo.Context) error {
	u, err := p.orgs.User(c.Request().Context(), me(c).OrgID, c.Param("user_id"))
	if err != nil {
		return p.adminNotFound(c, err)
	}
	d := &memberData{CSRF: csrfToken(c), User: u, Self: u.ID == me(c).UserID, Confirmed: removeConfirmed}
	return p.app(c, http.StatusOK, "admin-remove", &page{Section: "admin", Title: "Remove " + u.ID + "?", Data: d})
}

// removeMember removes a member once the confirmation page's form asked
// for it (any other post shows that page and changes nothing), and, with
// erase=yes, erases their account and profile (orgs.EraseUser); their
// sessions and tokens end in the same transaction. An admin who removes
// themselves is signed out with it.
func (p *Pages) removeMember(c echo.Context) error {
	if c.Request().PostFormValue("confirmed") != removeConfirmed {
		return p.removeMemberPage(c)
	}
	start, remove, tool := time.Now(), p.departs.Leave, "web:remove_user"
	if c.Request().PostFormValue("erase") == "yes" {
		remove, tool = p.departs.Erase, "web:erase_user"
	}
	r, _, err := remove(c.Request().Context(), me(c).OrgID, c.Param("user_id"))
	var touched []string
	if r != nil {
		touched = append(touched, r.UserID)
	}
	p.recordAction(c, tool, start, err, touched...)
	if err != nil {
		if ctalk.ErrorCode(err) == ctalk.ENotFound {
			return p.adminNotFound(c, err)
		}
		return adminRefused(err, func(status int, msg string) error {
			return p.member(c, status, &memberData{Form: "remove", Error: msg}, "")
		})
	}
	return done(c, "/admin", "removed")
}
