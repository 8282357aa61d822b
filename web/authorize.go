package web

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/oauth"
)

// authorize is the OAuth authorization endpoint: it checks the request,
// then signs the person in, asks their consent, or, when they gave it to
// this client before, sends the browser back with a code at once.
func (p *Pages) authorize(c echo.Context) error {
	return p.handleAuthorize(c, c.QueryParams(), "")
}

// authorizeForm takes the sign-in and consent forms of the authorization
// page; their hidden fields carry the authorization request.
func (p *Pages) authorizeForm(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return p.message(c, http.StatusBadRequest, "Sign-in failed", ctalk.Errorf(ctalk.EInvalid, "the form could not be read; go back and try again"))
	}
	return p.handleAuthorize(c, form, form.Get("action"))
}

func (p *Pages) handleAuthorize(c echo.Context, q url.Values, action string) error {
	ctx := c.Request().Context()
	site := oauth.SiteOf(p.cfg.PublicURL(c.Request()))
	req, err := p.oauth.ParseAuthorize(ctx, q, site)
	if req == nil {
		// The client or its redirect URI cannot be trusted: say so here,
		// never redirect.
		var oe *oauth.Error
		if errors.As(err, &oe) && oe.Unreachable {
			return p.render(c, http.StatusBadGateway, "client-unreachable", &page{Title: "This server cannot reach your client's details", Message: oe.Description,
				Data: clientUnreachable{Server: site.Issuer}})
		}
		return p.message(c, http.StatusBadRequest, "This sign-in link cannot be used", err)
	}
	// The browser may go back to the client's redirect URI after a form.
	c.Response().Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'self' "+formTarget(req.RedirectURI))
	if err != nil {
		return c.Redirect(http.StatusFound, req.ErrorRedirect(err, site.Issuer))
	}
	if action == "deny" {
		return c.Redirect(http.StatusFound, req.Denied(site.Issuer))
	}

	sess := p.Session(c)
	if action == "signin" {
		// The sign-in acts in the org the person typed (see ctalk.WithOrg).
		c.SetRequest(c.Request().WithContext(ctalk.WithTypedOrg(ctx, c.FormValue("org_id"))))
		raw, s, dev, err := p.auth.SignInOnDevice(c.Request().Context(), c.FormValue("org_id"), c.FormValue("user_id"), c.FormValue("password"), c.RealIP(), p.device(c))
		if err != nil {
			return p.signinPage(c, req, ctalk.ErrorMessage(err), ctalk.HTTPStatus(ctalk.ErrorCode(err)))
		}
		p.setSession(c, raw)
		if dev != "" {
			p.setDevice(c, dev)
		}
		if held, err := p.heldAtGlass(c, s, req); held || err != nil {
			return err
		}
		// Signing in on this page, which names the client and where it
		// returns, is the person's consent.
		return p.approve(c, req, s, site)
	}
	if sess == nil {
		return p.signinPage(c, req, "", http.StatusOK)
	}
	if held, err := p.heldAtGlass(c, sess, req); held || err != nil {
		return err
	}
	if action == "allow" {
		return p.approve(c, req, sess, site)
	}
	ok, err := p.oauth.Consented(c.Request().Context(), sess, req.Client.ID)
	if err != nil {
		return p.message(c, http.StatusServiceUnavailable, "Sign-in failed", err)
	}
	if ok {
		return p.approve(c, req, sess, site)
	}
	return p.render(c, http.StatusOK, "consent", &page{Title: "Allow " + visibleText(req.Client.Name) + "?", Action: oauth.AuthorizePath,
		Hidden: hidden(req), Request: req, Session: sess, Next: oauth.AuthorizePath + "?" + req.Query().Encode()})
}

// heldAtGlass sends a break-glass session (see breakGlass) to its passkey
// verification, which returns to the authorization.
func (p *Pages) heldAtGlass(c echo.Context, sess *auth.Session, req *oauth.AuthRequest) (bool, error) {
	if p.sso == nil || !sess.PasskeyAt.IsZero() {
		return false, nil
	}
	held, err := p.sso.BreakGlass(c.Request().Context(), sess)
	if err != nil || !held {
		return false, err
	}
	next := oauth.AuthorizePath + "?" + req.Query().Encode()
	return true, c.Redirect(http.StatusSeeOther, "/verify?"+url.Values{"next": {next}}.Encode())
}

func (p *Pages) approve(c echo.Context, req *oauth.AuthRequest, sess *auth.Session, site oauth.Site) error {
	to, err := p.oauth.Approve(c.Request().Context(), req, sess, site.Issuer)
	if err != nil {
		return p.message(c, ctalk.HTTPStatus(ctalk.ErrorCode(err)), "Sign-in failed", err)
	}
	return c.Redirect(http.StatusFound, to)
}

func (p *Pages) signinPage(c echo.Context, req *oauth.AuthRequest, msg string, status int) error {
	next := oauth.AuthorizePath + "?" + req.Query().Encode()
	return p.render(c, status, "signin", &page{Title: "Sign in to ctalk", Error: msg, Action: oauth.AuthorizePath, Next: next,
		Hidden: hidden(req), Request: req, OrgID: c.FormValue("org_id"), UserID: c.FormValue("user_id"),
		SignupURL: "/signup?" + url.Values{"next": {next}}.Encode(), ForgotURL: p.forgotURL()})
}

// hidden is the authorization request as the hidden fields of a form.
func hidden(req *oauth.AuthRequest) url.Values {
	return req.Query()
}

// formTarget is the CSP source of a redirect URI: its origin, or its scheme
// for a custom scheme.
func formTarget(redirect string) string {
	u, err := url.Parse(redirect)
	if err != nil {
		return ""
	}
	if u.Host == "" {
		return u.Scheme + ":"
	}
	return u.Scheme + "://" + u.Host
}

// clientUnreachable is the page of a sign-in whose client names itself by a
// metadata document this server could not fetch, as Claude Code does
// (https://claude.ai/oauth/claude-code-client-metadata) on a server
// without outbound internet: it gives the commands that register a client
// here instead and connect with its id.
type clientUnreachable struct {
	// Server is this server's address, as the browser reached it.
	Server string
}
