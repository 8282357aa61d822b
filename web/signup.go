package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/orgs"
)

// signupForm is what the sign-up form sends back, passwords left out.
type signupForm struct {
	OrgID, OrgName, UserID, Name, Ownership string
}

func (p *Pages) signupPage(c echo.Context) error {
	next := localPath(c.QueryParam("next"), "/")
	return p.render(c, http.StatusOK, "signup", &page{Title: "Create your organization", Next: next, Back: next, NeedSecret: p.cfg.SignupNeedsSecret})
}

// signup creates an organization under the rules of register_organization,
// with the person as its first member and admin, signs them in, and
// returns to next (the authorization they were in the middle of).
func (p *Pages) signup(c echo.Context) error {
	ctx := c.Request().Context()
	f := signupForm{OrgID: c.FormValue("org_id"), OrgName: c.FormValue("org_name"), UserID: c.FormValue("user_id"),
		Name: c.FormValue("name"), Ownership: c.FormValue("ownership")}
	next := localPath(c.FormValue("next"), "/")
	fail := func(err error) error {
		return p.render(c, ctalk.HTTPStatus(ctalk.ErrorCode(err)), "signup", &page{Title: "Create your organization", Error: ctalk.ErrorMessage(err),
			Next: next, Back: next, Form: f, NeedSecret: p.cfg.SignupNeedsSecret})
	}
	if err := p.cfg.CheckSignup(c.FormValue("signup_secret")); err != nil {
		return fail(err)
	}
	// The person's account is checked before the organization is created,
	// so that a mistake in it leaves nothing half made.
	user := orgs.NewUser{ID: f.UserID, Name: f.Name, Password: c.FormValue("password"), Role: orgs.RoleAdmin,
		Ownership: orgs.SplitOwnership(f.Ownership)}
	if _, err := ctalk.ParseID("user_id", user.ID); err != nil {
		return fail(err)
	}
	if _, err := ctalk.Text("name", user.Name, orgs.MaxNameLen, true); err != nil {
		return fail(err)
	}
	if err := auth.ValidatePassword("password", user.Password, auth.MinUserPasswordLen); err != nil {
		return fail(err)
	}
	org, err := p.orgs.Register(ctx, orgs.NewOrg{ID: f.OrgID, Name: f.OrgName, AdminPassword: c.FormValue("admin_password")})
	if err != nil {
		return fail(err)
	}
	u, err := p.orgs.AddUser(ctx, org.ID, user)
	if err != nil {
		return fail(err)
	}
	sess := &auth.Session{OrgID: org.ID, UserID: u.ID, Role: u.Role}
	raw, err := p.auth.StartWebSession(ctx, sess)
	if err != nil {
		return fail(err)
	}
	p.setSession(c, raw)
	return c.Redirect(http.StatusSeeOther, next)
}
