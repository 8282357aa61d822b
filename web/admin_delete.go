package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/orgs"
)

// mountDeletion adds the admins' scheduling of the organization's
// deletion and its cancellation (docs/data.md). Deleting the org is a
// power only a person holds: there is no tool for it, and it takes the
// org's id typed again and, where the org asks for passkeys or the admin
// has one, a passkey verification of the last few minutes, else the
// admin's password.
func (p *Pages) mountDeletion(r routes) {
	r.POST("/admin/delete", p.scheduleDeletion)
	r.POST("/admin/delete/cancel", p.cancelDeletion)
}

func (p *Pages) scheduleDeletion(c echo.Context) error {
	start, ctx, m := time.Now(), c.Request().Context(), me(c)
	org, err := p.orgs.Org(ctx, m.OrgID)
	if err != nil {
		return err
	}
	refuse := func(err error) error {
		p.recordAction(c, "web:schedule_org_deletion", start, err)
		return adminRefused(err, func(status int, msg string) error {
			return p.admin(c, status, &adminData{Add: memberForm{Role: orgs.RoleMember}, DeleteError: msg}, "")
		})
	}
	if strings.TrimSpace(strings.ToLower(c.FormValue("confirm_org_id"))) != org.ID {
		return refuse(ctalk.Errorf(ctalk.EInvalid, "type the organization's id, %s, to confirm its deletion", org.ID))
	}
	keys, err := p.auth.Passkeys(ctx, m.OrgID, m.UserID)
	if err != nil {
		return err
	}
	switch {
	case org.AsksForPasskeys() || len(keys) > 0:
		if !m.PasskeyVerifiedRecently(time.Now()) {
			return p.stepUp(c, http.StatusUnauthorized, "Deleting the organization takes a passkey verification of yours. Nothing was changed yet: verify with your passkey, and the deletion is scheduled.",
				c.Request().URL.Path, replayed(c), "")
		}
	default:
		if _, err := p.auth.CheckPassword(ctx, m.OrgID, m.UserID, c.FormValue("your_password"), c.RealIP()); err != nil {
			if ctalk.ErrorCode(err) == ctalk.EUnauthorized {
				err = ctalk.Errorf(ctalk.EUnauthorized, "your own password is not right; type the password you sign in with to confirm the deletion")
			}
			return refuse(err)
		}
	}
	d, members, err := p.orgs.ScheduleDeletion(ctx, m.Caller())
	if err != nil {
		return refuse(err)
	}
	p.recordAction(c, "web:schedule_org_deletion", start, nil)
	if p.access != nil {
		p.access.TellDeletion(ctx, org, p.nameOf(c), members, d.DueAt)
	}
	return done(c, "/admin#org-delete", "deletion")
}

func (p *Pages) cancelDeletion(c echo.Context) error {
	start, ctx, m := time.Now(), c.Request().Context(), me(c)
	err := p.orgs.CancelDeletion(ctx, m.Caller())
	p.recordAction(c, "web:cancel_org_deletion", start, err)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			return p.admin(c, status, &adminData{Add: memberForm{Role: orgs.RoleMember}, DeleteError: msg}, "")
		})
	}
	if org, err := p.orgs.Org(ctx, m.OrgID); err == nil && p.access != nil {
		if members, err := p.orgs.Users(ctx, m.OrgID); err == nil {
			p.access.TellDeletion(ctx, org, p.nameOf(c), members, time.Time{})
		}
	}
	return done(c, "/admin#org-delete", "deletion-cancelled")
}

// nameOf is the name of the person signed in, or their id.
func (p *Pages) nameOf(c echo.Context) string {
	m := me(c)
	if u, err := p.orgs.User(c.Request().Context(), m.OrgID, m.UserID); err == nil {
		return u.Name
	}
	return m.UserID
}
