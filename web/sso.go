package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/sso"
)

// Single sign-on's pages: the sign-in through the org's identity provider
// (/sso/start, then the provider, then sso.CallbackPath), offered by both
// sign-in pages, and the admins' settings (/admin/sso).

// ssoCookie holds the state of the sign-in begun at the provider, which
// the callback must find in the browser that began it (so that nobody can
// sign a victim's browser in as themselves with their own callback URL);
// over https it carries hostOnly's prefix.
const ssoCookie = "ctalk_sso"

// mountSSO adds the sign-in through the provider, which needs no session.
func (p *Pages) mountSSO(e *echo.Echo, mw []echo.MiddlewareFunc) {
	if p.sso == nil {
		return
	}
	e.POST("/sso/start", p.ssoStart, mw...)
	e.GET(sso.CallbackPath, p.ssoCallback, mw...)
	// The identity provider's page posts the response here: a form of
	// another site, with no CSRF token of this one; the request ID the
	// browser holds, and the response's signature, stand for it.
	e.POST(sso.ACSPath, p.samlACS, p.headers, readForm)
	e.GET(sso.MetadataPath(":org"), p.samlMetadata)
}

// mountSSOAdmin adds the admins' settings (behind adminOnly).
func (p *Pages) mountSSOAdmin(r routes) {
	if p.sso == nil {
		return
	}
	r.GET("/admin/sso", p.ssoAdminPage)
	r.POST("/admin/sso", p.ssoConfigure)
	r.POST("/admin/sso/test", p.ssoTest)
	r.POST("/admin/sso/required", p.ssoRequired)
	r.POST("/admin/sso/remove", p.ssoRemove)
	r.POST("/admin/sso/roll-key", p.ssoRollKey)
	r.POST("/admin/sso/domains", p.ssoAddDomain)
	r.POST("/admin/sso/domains/:id/verify", p.ssoVerifyDomain)
	r.POST("/admin/sso/domains/:id/remove", p.ssoRemoveDomain)
}

// ssoContinue is the page between a sign-in form and the provider: a form
// may only post to this site (the pages' form-action), so the browser goes
// on by a link, which also shows where it goes.
type ssoContinue struct {
	URL, Host string
}

// ssoStart begins a sign-in at the provider of the org named by its id, or
// by the domain of a work email.
func (p *Pages) ssoStart(c echo.Context) error {
	ctx, who := c.Request().Context(), strings.TrimSpace(c.FormValue("org"))
	next := localPath(c.FormValue("next"), "/inbox")
	orgID := who
	if strings.Contains(who, "@") {
		var err error
		if orgID, err = p.sso.OrgByDomain(ctx, who); err != nil {
			return p.ssoRefused(c, err)
		}
	}
	st, err := p.sso.Begin(ctx, orgID, sso.PurposeSignIn, "", next, p.publicURL(c))
	if err != nil {
		return p.ssoRefused(c, err)
	}
	return p.ssoGo(c, st)
}

// ssoGo sets the state cookie and sends the browser on to the provider.
// A SAML provider posts the browser back from its own site, which a Lax
// cookie does not go with: over https that cookie is SameSite=None. It
// holds only the request's ID, which nobody can use without the
// provider's signed response, and is taken once.
func (p *Pages) ssoGo(c echo.Context, st *sso.Start) error {
	secure := p.secure(c.Request())
	same := http.SameSiteLaxMode
	if st.Kind == sso.KindSAML && secure {
		same = http.SameSiteNoneMode
	}
	c.SetCookie(&http.Cookie{Name: cookieName(ssoCookie, secure), Value: st.State, Path: "/", HttpOnly: true, SameSite: same,
		Secure: secure, MaxAge: int(sso.StateTTL.Seconds())})
	host := st.Site
	if u, err := url.Parse(st.Site); err == nil {
		host = u.Host
	}
	return p.render(c, http.StatusOK, "sso-continue", &page{Title: "Continue to your organization's sign-in", Data: ssoContinue{URL: st.URL, Host: host}})
}

// ssoRefused renders the page of a single sign-on that cannot go on.
func (p *Pages) ssoRefused(c echo.Context, err error) error {
	if ctalk.ErrorCode(err) == ctalk.EInternal {
		return err
	}
	return p.render(c, ctalk.HTTPStatus(ctalk.ErrorCode(err)), "message", &page{Title: "Single sign-on failed", Message: ctalk.ErrorMessage(err), Next: "/signin"})
}

// takeSSOCookie returns the state of the sign-in this browser began, and
// forgets it.
func (p *Pages) takeSSOCookie(c echo.Context) string {
	secure := p.secure(c.Request())
	ck, _ := c.Cookie(cookieName(ssoCookie, secure))
	c.SetCookie(&http.Cookie{Name: cookieName(ssoCookie, secure), Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secure, MaxAge: -1})
	if ck == nil {
		return ""
	}
	return ck.Value
}

// notBegunHere is the refusal of a sign-in that came back to a browser
// that did not begin it.
func notBegunHere() error {
	return ctalk.Errorf(ctalk.EUnauthorized, "this sign-in was not begun in this browser, or was used already; sign in again")
}

// ssoCallback ends a sign-in at an OpenID Connect provider: the state must
// be the one this browser began, once; then the provider's answer is
// checked and the person signed in, or the admin's test login recorded.
func (p *Pages) ssoCallback(c echo.Context) error {
	ctx, state := c.Request().Context(), c.QueryParam("state")
	if ck := p.takeSSOCookie(c); ck == "" || ck != state {
		return p.ssoRefused(c, notBegunHere())
	}
	if e := c.QueryParam("error"); e != "" {
		// The provider refused; its description is its own text, not shown.
		return p.ssoRefused(c, ctalk.Errorf(ctalk.EUnauthorized, "the identity provider did not sign you in (%s); sign in again, or ask your admin", ctalk.Shorten(e, 60)))
	}
	start := time.Now()
	res, err := p.sso.Finish(ctx, state, c.QueryParam("code"), p.publicURL(c)+sso.CallbackPath)
	if err != nil {
		return p.ssoRefused(c, err)
	}
	return p.ssoSignedIn(c, start, res)
}

// samlACS ends a sign-in at a SAML provider: the response must answer the
// request this browser began (its ID is the cookie), once; ctalk accepts
// no response the provider sends unasked (IdP-initiated), since nothing
// would bind it to this browser.
func (p *Pages) samlACS(c echo.Context) error {
	requestID := p.takeSSOCookie(c)
	if requestID == "" {
		return p.ssoRefused(c, ctalk.Errorf(ctalk.EUnauthorized, "this sign-in was not begun in this browser, or was used already. ctalk accepts only sign-ins begun on its sign-in page, not from the identity provider's portal; sign in again"))
	}
	start := time.Now()
	res, err := p.sso.FinishSAML(c.Request().Context(), requestID, c.Request().PostForm.Get("SAMLResponse"), p.publicURL(c))
	if err != nil {
		return p.ssoRefused(c, err)
	}
	return p.ssoSignedIn(c, start, res)
}

// ssoSignedIn signs in the person a provider vouched for, or records the
// admin's test login.
func (p *Pages) ssoSignedIn(c echo.Context, start time.Time, res *sso.Result) error {
	// The rest acts in the org the provider signed the person in to.
	c.SetRequest(c.Request().WithContext(ctalk.WithOrg(c.Request().Context(), res.OrgID)))
	sess := &auth.Session{OrgID: res.OrgID, UserID: res.UserID, Role: res.Role, SignedInWith: auth.SignedInSSO}
	p.recordSSO(c, sess, "web:sso_signin", start, res)
	if res.Purpose == sso.PurposeTest {
		return done(c, "/admin/sso", "tested")
	}
	raw, err := p.auth.StartWebSession(c.Request().Context(), sess)
	if err != nil {
		return err
	}
	p.setSession(c, raw)
	return c.Redirect(http.StatusSeeOther, p.afterSignIn(c, sess, localPath(res.Next, "/inbox")))
}

// samlMetadata serves an org's SAML service provider metadata, for its
// identity provider.
func (p *Pages) samlMetadata(c echo.Context) error {
	b, err := p.sso.Metadata(c.Request().Context(), c.Param("org"), p.publicURL(c))
	if err != nil {
		if ctalk.ErrorCode(err) == ctalk.EInternal {
			return err
		}
		return echo.NewHTTPError(ctalk.HTTPStatus(ctalk.ErrorCode(err)), ctalk.ErrorMessage(err))
	}
	return c.Blob(http.StatusOK, "application/samlmetadata+xml", b)
}

// recordSSO writes a sign-in through the provider to the org's audit log,
// with how the person was linked when they were just linked.
func (p *Pages) recordSSO(c echo.Context, sess *auth.Session, tool string, start time.Time, res *sso.Result) {
	if p.audit == nil {
		return
	}
	if res.Purpose == sso.PurposeTest {
		tool = "web:sso_test"
	}
	if res.Linked != "" {
		tool += "_linked_" + res.Linked
	}
	p.audit.Record(audit.Event{At: start.UTC(), OrgID: sess.OrgID, UserID: sess.UserID, Tool: tool, Outcome: "ok",
		DurationMS: float64(time.Since(start).Microseconds()) / 1000, IDs: []string{sess.UserID}, RequestID: c.Response().Header().Get(echo.HeaderXRequestID)})
}

var ssoFlash = map[string]string{
	"saved":    "Single sign-on saved. Its client secret is kept and never shown again. Run a test sign-in before requiring it.",
	"tested":   "Test sign-in succeeded: the provider signed you in, and you may now require single sign-on.",
	"required": "Single sign-on is required: members sign in only through your provider; admins keep the break-glass sign-in (password and passkey).",
	"optional": "Single sign-on is optional again: passwords sign in too.",
	"removed":  "Single sign-on removed, with every member's link to the provider.",
	"domain":   "Domain added. Publish its TXT record at your DNS provider, then press Verify.",
	"verified": "Domain verified: its people reach your provider from the sign-in page by their address.",
	"dropped":  "Domain removed.",
	"rolled":   "SAML signing key rolled: the new key signs from now on. Give your provider the new certificate where it checks signed requests; the old one stays in the metadata for 7 days.",
}

// ssoAdminData is the admins' single sign-on page.
type ssoAdminData struct {
	CSRF     string
	Provider *sso.Provider
	// Domains are the org's email domains, verified or pending.
	Domains []sso.Domain
	// Domain is the domain typed in the form that adds one; DomainError
	// what was wrong with a domain's addition, verification or removal.
	Domain, DomainError string
	Form                sso.Settings
	Callback            string
	// EntityID (also the SP metadata's address) and ACS are what an admin
	// enters at a SAML provider.
	EntityID, ACS string
	Error         string
}

func (p *Pages) ssoAdminPage(c echo.Context) error {
	return p.ssoAdmin(c, http.StatusOK, &ssoAdminData{}, flash(c, ssoFlash))
}

// ssoAdmin renders the admins' page around d.
func (p *Pages) ssoAdmin(c echo.Context, status int, d *ssoAdminData, flashed string) error {
	var err error
	ctx, caller := c.Request().Context(), me(c).Caller()
	if d.Provider, err = p.sso.Provider(ctx, caller); err != nil {
		return err
	}
	if d.Domains, err = p.sso.Domains(ctx, caller); err != nil {
		return err
	}
	if d.Form.Kind == "" && d.Provider != nil {
		d.Form = sso.Settings{Kind: d.Provider.Kind, JIT: d.Provider.JIT, LinkByEmail: d.Provider.LinkByEmail}
		if d.Provider.Kind == sso.KindSAML {
			d.Form.MetadataURL = d.Provider.MetadataURL
		} else {
			d.Form.Issuer, d.Form.ClientID = d.Provider.Issuer, d.Provider.ClientID
		}
	}
	base := p.publicURL(c)
	d.CSRF, d.Callback = csrfToken(c), base+sso.CallbackPath
	d.EntityID, d.ACS = base+sso.MetadataPath(me(c).OrgID), base+sso.ACSPath
	return p.app(c, status, "sso-admin", &page{Section: "admin", Title: "Single sign-on", Data: d, Flash: flashed})
}

// personOnly asks an admin of an org that asks for passkeys for a fresh
// verification before a change of how people sign in, as the settings
// that weaken oversight do; it returns nil when the change may go on.
func (p *Pages) personOnly(c echo.Context, what, back string) (bool, error) {
	m := me(c)
	org, err := p.orgs.Org(c.Request().Context(), m.OrgID)
	if err != nil {
		return false, err
	}
	if org.AsksForPasskeys() && !m.PasskeyVerifiedRecently(time.Now()) {
		// A client secret is not carried through the step-up page.
		return false, p.stepUp(c, http.StatusUnauthorized, "Your organization asks for passkeys, and "+what+" changes how everyone signs in: it takes a passkey verification of yours. Nothing was changed: verify with your passkey, then send the form again.",
			"", nil, back)
	}
	return true, nil
}

func (p *Pages) ssoConfigure(c echo.Context) error {
	start := time.Now()
	if ok, err := p.personOnly(c, "setting up single sign-on", "/admin/sso"); !ok {
		return err
	}
	in := sso.Settings{Kind: c.FormValue("kind"), Issuer: c.FormValue("issuer"), ClientID: c.FormValue("client_id"), ClientSecret: c.FormValue("client_secret"),
		Metadata: c.FormValue("metadata"), MetadataURL: c.FormValue("metadata_url"),
		JIT: c.FormValue("jit") == "on", LinkByEmail: c.FormValue("link_by_email") == "on"}
	_, err := p.sso.Configure(c.Request().Context(), me(c).Caller(), in)
	p.recordAction(c, "web:sso_configure", start, err)
	if err != nil {
		in.ClientSecret = ""
		if in.Kind == "" {
			in.Kind = sso.KindOIDC
		}
		return adminRefused(err, func(status int, msg string) error {
			return p.ssoAdmin(c, status, &ssoAdminData{Form: in, Error: msg}, "")
		})
	}
	return done(c, "/admin/sso", "saved")
}

// ssoTest begins the admin's test login of the org's provider.
func (p *Pages) ssoTest(c echo.Context) error {
	m := me(c)
	st, err := p.sso.Begin(c.Request().Context(), m.OrgID, sso.PurposeTest, m.UserID, "/admin/sso", p.publicURL(c))
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			return p.ssoAdmin(c, status, &ssoAdminData{Error: msg}, "")
		})
	}
	return p.ssoGo(c, st)
}

func (p *Pages) ssoRequired(c echo.Context) error {
	start, on := time.Now(), c.FormValue("required") == "on"
	if ok, err := p.personOnly(c, "requiring single sign-on", "/admin/sso"); !ok {
		return err
	}
	err := p.sso.SetRequired(c.Request().Context(), me(c).Caller(), on)
	p.recordAction(c, "web:sso_required", start, err)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			return p.ssoAdmin(c, status, &ssoAdminData{Error: msg}, "")
		})
	}
	if on {
		return done(c, "/admin/sso", "required")
	}
	return done(c, "/admin/sso", "optional")
}

func (p *Pages) ssoRemove(c echo.Context) error {
	start := time.Now()
	if ok, err := p.personOnly(c, "removing single sign-on", "/admin/sso"); !ok {
		return err
	}
	err := p.sso.Remove(c.Request().Context(), me(c).Caller())
	p.recordAction(c, "web:sso_remove", start, err)
	if err != nil {
		return err
	}
	return done(c, "/admin/sso", "removed")
}

// ssoRollKey replaces the org's SAML signing key; the old one is offered
// for a grace period. Neither key is shown, logged or audited.
func (p *Pages) ssoRollKey(c echo.Context) error {
	start := time.Now()
	if ok, err := p.personOnly(c, "rolling the SAML signing key", "/admin/sso"); !ok {
		return err
	}
	err := p.sso.RollKey(c.Request().Context(), me(c).Caller())
	p.recordAction(c, "web:sso_roll_key", start, err)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			return p.ssoAdmin(c, status, &ssoAdminData{Error: msg}, "")
		})
	}
	return done(c, "/admin/sso#sso-key", "rolled")
}

// ssoAddDomain adds an email domain, pending until its TXT record is
// found.
func (p *Pages) ssoAddDomain(c echo.Context) error {
	start, name := time.Now(), c.FormValue("domain")
	d, err := p.sso.AddDomain(c.Request().Context(), me(c).Caller(), name)
	var id string
	if d != nil {
		id = d.ID
	}
	p.recordAction(c, "web:sso_domain_add", start, err, id)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			return p.ssoAdmin(c, status, &ssoAdminData{Domain: name, DomainError: msg}, "")
		})
	}
	return done(c, "/admin/sso#domain-"+d.ID, "domain")
}

// ssoVerifyDomain looks up a domain's TXT record; found, the domain routes
// sign-ins and vouches for addresses, which changes how people sign in.
func (p *Pages) ssoVerifyDomain(c echo.Context) error {
	start, id := time.Now(), c.Param("id")
	if ok, err := p.personOnly(c, "verifying an email domain", "/admin/sso"); !ok {
		return err
	}
	_, err := p.sso.VerifyDomain(c.Request().Context(), me(c).Caller(), id)
	p.recordAction(c, "web:sso_domain_verify", start, err, id)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			return p.ssoAdmin(c, status, &ssoAdminData{DomainError: msg}, "")
		})
	}
	return done(c, "/admin/sso#domain-"+id, "verified")
}

func (p *Pages) ssoRemoveDomain(c echo.Context) error {
	start, id := time.Now(), c.Param("id")
	if ok, err := p.personOnly(c, "removing an email domain", "/admin/sso"); !ok {
		return err
	}
	err := p.sso.RemoveDomain(c.Request().Context(), me(c).Caller(), id)
	p.recordAction(c, "web:sso_domain_remove", start, err, id)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			return p.ssoAdmin(c, status, &ssoAdminData{DomainError: msg}, "")
		})
	}
	return done(c, "/admin/sso#sso-domains", "dropped")
}

// breakGlass holds an admin's password sign-in to an org that requires
// single sign-on at the passkey verification that completes it: until the
// session holds one, every page but the verification asks for it.
func (p *Pages) breakGlass(c echo.Context, sess *auth.Session) (bool, error) {
	if p.sso == nil || !sess.PasskeyAt.IsZero() {
		return false, nil
	}
	held, err := p.sso.BreakGlass(c.Request().Context(), sess)
	if err != nil || !held {
		return false, err
	}
	switch c.Path() {
	case "/verify", "/passkeys/verify/begin", "/passkeys/verify/finish":
		return false, nil
	}
	return true, p.stepUp(c, http.StatusUnauthorized, "Your organization requires single sign-on. This is the admins' break-glass sign-in: it needs your passkey as well as your password, and the other admins are told of it.",
		"", nil, localPath(c.Request().URL.RequestURI(), "/inbox"))
}

// brokeGlass records an admin's completed break-glass sign-in and tells
// the org's other admins of it: by mail, and by their webhooks and
// browsers.
func (p *Pages) brokeGlass(ctx context.Context, c echo.Context, sess *auth.Session) {
	p.recordAction(c, "web:sso_break_glass", time.Now(), nil)
	p.access.TellBreakGlass(ctx, sess.OrgID, sess.UserID)
	users, err := p.orgs.Users(ctx, sess.OrgID)
	if err != nil {
		p.cfg.Logger.Warn("break-glass sign-in not announced", "error", err)
		return
	}
	for _, u := range users {
		if u.Role == orgs.RoleAdmin && u.ID != sess.UserID {
			p.tellSecurity(ctx, sess.OrgID, u.ID, fmt.Sprintf("The admin %s signed in with the break-glass sign-in (password and passkey), bypassing your organization's single sign-on.", sess.UserID))
		}
	}
}

// passwordSessionRefused is the page of a password just set (by an invite
// or a reset link) that may not sign its member in, their org requiring
// single sign-on (see sso.Service.Gate); nil when it may. An admin's
// session is begun, and held at the break-glass passkey step.
func (p *Pages) passwordSessionRefused(c echo.Context, sess *auth.Session, what string) error {
	if p.sso == nil {
		return nil
	}
	err := p.sso.Gate(c.Request().Context(), sess.OrgID, sess.UserID, auth.DoorWeb)
	switch ctalk.ErrorCode(err) {
	case "":
		return nil
	case ctalk.EInternal:
		return err
	}
	return p.render(c, http.StatusOK, "message", &page{Title: what + ", but not signed in", Message: ctalk.ErrorMessage(err), Next: "/signin"})
}
