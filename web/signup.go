package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/oauth"
	"github.com/ctalk/ctalk/orgs"
)

// signupForm is what the sign-up form sends back, passwords left out, and
// its mistakes by field (org_id, org_name, admin_password, signup_secret,
// approval_mode, user_id, name, password, ownership; form for the whole
// form).
type signupForm struct {
	OrgID, OrgName, UserID, Name, Ownership string
	// ApprovalMode is the admin's choice of how answers are approved,
	// which the form asks for rather than assuming.
	ApprovalMode string
	Errors       map[string]string
	// First is the first field with a mistake, which takes the focus.
	First string
}

// signupFields are the fields of the sign-up form, in the order it shows them.
var signupFields = []string{"org_id", "org_name", "admin_password", "signup_secret", "approval_mode", "user_id", "name", "password", "ownership"}

// signupPage is the sign-up form; after it, the person lands on next, or
// in the app when no next was given.
func (p *Pages) signupPage(c echo.Context) error {
	next := localPath(c.QueryParam("next"), "/inbox")
	return p.renderSignup(c, http.StatusOK, next, signupForm{})
}

func (p *Pages) renderSignup(c echo.Context, status int, next string, f signupForm) error {
	msg := ""
	for _, field := range signupFields {
		if _, ok := f.Errors[field]; ok && f.First == "" {
			f.First = field
		}
	}
	if len(f.Errors) > 0 {
		msg = "Nothing was created. Fix what is marked below and send the form again."
		if m, ok := f.Errors["form"]; ok {
			msg = m
		}
	}
	// Back to where the person came from: the sign-in of the authorization
	// they are in the middle of (which names the client), or the app's.
	back := "/signin?" + url.Values{"next": {next}}.Encode()
	if strings.HasPrefix(next, oauth.AuthorizePath+"?") {
		back = next
	}
	return p.render(c, status, "signup", &page{Title: "Create your organization", Error: msg, Next: next,
		Back: back, Form: f, NeedSecret: p.cfg.SignupNeedsSecret})
}

// signup creates an organization under the rules of register_organization,
// with the person as its first member and admin, signs them in, and sends
// them to next (the authorization they were in the middle of, or the app).
// Every field is checked before anything is created, and each mistake is
// shown next to its field.
func (p *Pages) signup(c echo.Context) error {
	// The new org's rows are written in its own scope (see ctalk.WithOrg).
	ctx := ctalk.WithTypedOrg(c.Request().Context(), c.FormValue("org_id"))
	c.SetRequest(c.Request().WithContext(ctx))
	f := signupForm{OrgID: c.FormValue("org_id"), OrgName: c.FormValue("org_name"), UserID: c.FormValue("user_id"),
		Name: c.FormValue("name"), Ownership: c.FormValue("ownership"), ApprovalMode: c.FormValue("approval_mode")}
	next := localPath(c.FormValue("next"), "/inbox")
	org := orgs.NewOrg{ID: f.OrgID, Name: f.OrgName, AdminPassword: c.FormValue("admin_password"), ApprovalMode: f.ApprovalMode}
	user := orgs.NewUser{ID: f.UserID, Name: f.Name, Password: c.FormValue("password"), Role: orgs.RoleAdmin,
		Ownership: orgs.SplitOwnership(f.Ownership)}
	if status, errs := p.checkSignup(c, org, user); len(errs) > 0 {
		f.Errors = errs
		return p.renderSignup(c, status, next, f)
	}
	fail := func(field string, err error) error {
		if ctalk.ErrorCode(err) == ctalk.EInternal {
			return err
		}
		f.Errors = map[string]string{field: ctalk.ErrorMessage(err)}
		return p.renderSignup(c, ctalk.HTTPStatus(ctalk.ErrorCode(err)), next, f)
	}
	// The organization and its admin are created together: a failure
	// between the two must not leave an organization nobody can sign in to.
	created, u, err := p.orgs.RegisterWithAdmin(ctx, org, user)
	if ctalk.ErrorCode(err) == ctalk.EConflict {
		// Its fields were checked: what is left is an id already taken.
		return fail("org_id", err)
	}
	if err != nil {
		return fail("form", err)
	}
	sess := &auth.Session{OrgID: created.ID, UserID: u.ID, Role: u.Role}
	raw, err := p.auth.StartWebSession(ctx, sess)
	if err != nil {
		return err
	}
	p.setSession(c, raw)
	return c.Redirect(http.StatusSeeOther, next)
}

// checkSignup applies the rules of register_organization (the per-address
// sign-up rate, the sign-up secret) and checks every field of the form, and
// returns the mistakes by field with the status of the first.
func (p *Pages) checkSignup(c echo.Context, org orgs.NewOrg, user orgs.NewUser) (int, map[string]string) {
	errs := map[string]string{}
	status := 0
	add := func(field string, err error) {
		if _, ok := errs[field]; !ok {
			errs[field] = ctalk.ErrorMessage(err)
		}
		if status == 0 {
			status = ctalk.HTTPStatus(ctalk.ErrorCode(err))
		}
	}
	if err := p.auth.AllowSignup(c.Request().Context()); err != nil {
		// Nothing else is checked: each check could be a guess.
		add("form", err)
		return status, errs
	}
	if err := p.cfg.CheckSignup(c.FormValue("signup_secret")); err != nil {
		field := "form"
		if p.cfg.SignupNeedsSecret {
			field = "signup_secret"
		}
		add(field, err)
	}
	for _, fe := range org.Check() {
		field := fe.Field
		if field == "name" {
			field = "org_name"
		}
		add(field, fieldLabelled(fe.Err, fe.Field, signupLabels[field]))
	}
	for _, fe := range user.Check() {
		add(fe.Field, fieldLabelled(fe.Err, fe.Field, signupLabels[fe.Field]))
	}
	if org.ApprovalMode == "" {
		add("approval_mode", ctalk.Errorf(ctalk.EInvalid, "choose how answers are approved: by each person's agent, or by the person here"))
	}
	return status, errs
}

// signupLabels name the sign-up form's fields in its mistakes as the form
// labels them.
var signupLabels = map[string]string{"org_id": "The organization id", "org_name": "The organization name",
	"admin_password": "The admin password", "approval_mode": "How answers are approved", "user_id": "Your user id", "name": "Your name", "password": "Your password"}

// fieldLabelled returns err with the name of the argument that starts its
// message (as the tools name it, such as admin_password) replaced by the
// label of the form's field.
func fieldLabelled(err error, arg, label string) error {
	msg := ctalk.ErrorMessage(err)
	if label == "" || !strings.HasPrefix(msg, arg+" ") {
		return err
	}
	return &ctalk.Error{Code: ctalk.ErrorCode(err), Message: label + msg[len(arg):]}
}
