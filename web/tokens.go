package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
)

// mountTokens adds the routes of the app's tokens section: every client
// connected as me (OAuth grants, login and personal tokens, browser
// sessions), revoking them, and new personal tokens.
func (p *Pages) mountTokens(r routes) {
	r.GET("/tokens", p.tokensPage)
	r.POST("/tokens", p.createToken)
	r.POST("/tokens/revoke", p.revokeToken)
}

// Kind of credential that is an OAuth grant on the tokens page; the others
// are auth's kinds.
const kindOAuth = "oauth"

// tokensData is the tokens page.
type tokensData struct {
	Grants    []credentialRow
	Tokens    []credentialRow
	Sessions  []credentialRow
	Lifetimes []int
	CSRF      string
	// Form is the new personal token form as sent, with its error.
	Label string
	Days  int
	Error string
	// RevokeError says why a revocation failed.
	RevokeError string
	// Created is the personal token just made, shown this once.
	Created *createdToken
	MCP     string
}

// credentialRow is one line of the page, with what its revoke form needs.
type credentialRow struct {
	Kind, ID, Name, CSRF             string
	CreatedAt, LastUsedAt, ExpiresAt time.Time
	Current                          bool
}

type createdToken struct {
	Raw, Label string
	ExpiresAt  time.Time
}

var tokenFlash = map[string]string{
	"revoked": "Revoked. Whatever used it is refused from its next call on.",
}

func (p *Pages) tokensPage(c echo.Context) error {
	return p.tokens(c, http.StatusOK, &tokensData{Days: auth.PersonalTokenLifetimes[1]}, flash(c, tokenFlash))
}

// tokens renders the tokens page around d, with everything I hold.
func (p *Pages) tokens(c echo.Context, status int, d *tokensData, flashed string) error {
	ctx, m := c.Request().Context(), me(c)
	d.CSRF = csrfToken(c)
	grants, err := p.oauth.Grants(ctx, m.OrgID, m.UserID)
	if err != nil {
		return err
	}
	for _, g := range grants {
		d.Grants = append(d.Grants, credentialRow{Kind: kindOAuth, ID: g.ID, Name: g.ClientName, CSRF: d.CSRF,
			CreatedAt: g.CreatedAt, LastUsedAt: g.LastUsedAt, ExpiresAt: g.ExpiresAt})
	}
	creds, err := p.auth.Credentials(ctx, m)
	if err != nil {
		return err
	}
	for _, cr := range creds {
		row := credentialRow{Kind: cr.Kind, ID: cr.ID, Name: cr.Label, CSRF: d.CSRF, Current: cr.Current,
			CreatedAt: cr.CreatedAt, LastUsedAt: cr.LastUsedAt, ExpiresAt: cr.ExpiresAt}
		if cr.Kind == auth.KindSession {
			d.Sessions = append(d.Sessions, row)
		} else {
			d.Tokens = append(d.Tokens, row)
		}
	}
	d.Lifetimes = auth.PersonalTokenLifetimes
	d.MCP = p.cfg.PublicURL(c.Request()) + "/mcp"
	return p.app(c, status, "tokens", &page{Section: "tokens", Title: "Agents and tokens", Data: d, Flash: flashed})
}

// createToken makes a personal token and shows it on this response only:
// never through a redirect, a flash or a URL, and never logged.
func (p *Pages) createToken(c echo.Context) error {
	start := time.Now()
	d := &tokensData{Label: c.FormValue("label")}
	d.Days, _ = strconv.Atoi(c.FormValue("days"))
	raw, cred, err := p.auth.CreatePersonalToken(c.Request().Context(), me(c), d.Label, d.Days)
	p.recordAction(c, "web:create_personal_token", start, err, me(c).UserID)
	if err != nil {
		if ctalk.ErrorCode(err) == ctalk.EInternal {
			return err
		}
		d.Error = ctalk.ErrorMessage(err)
		return p.tokens(c, ctalk.HTTPStatus(ctalk.ErrorCode(err)), d, "")
	}
	d.Created = &createdToken{Raw: raw, Label: cred.Label, ExpiresAt: cred.ExpiresAt}
	d.Label, d.Days = "", auth.PersonalTokenLifetimes[1]
	return p.tokens(c, http.StatusOK, d, "")
}

// revokeToken revokes one of my credentials; revoking this browser's
// session signs me out.
func (p *Pages) revokeToken(c echo.Context) error {
	start := time.Now()
	ctx, m := c.Request().Context(), me(c)
	kind, id := c.FormValue("kind"), c.FormValue("id")
	var current bool
	var err error
	switch kind {
	case kindOAuth:
		// auth announces it, so that what the grant's tokens hold open ends.
		err = p.oauth.RevokeOwnGrant(ctx, m.OrgID, m.UserID, id)
	case auth.KindLogin, auth.KindPersonal, auth.KindSession:
		current, err = p.auth.RevokeCredential(ctx, m, kind, id)
	default:
		err = ctalk.Errorf(ctalk.EInvalid, "kind must be one of oauth, login, personal, session")
	}
	p.recordAction(c, "web:revoke_credential", start, err, m.UserID)
	if err != nil {
		if ctalk.ErrorCode(err) == ctalk.EInternal {
			return err
		}
		return p.tokens(c, ctalk.HTTPStatus(ctalk.ErrorCode(err)), &tokensData{Days: auth.PersonalTokenLifetimes[1], RevokeError: ctalk.ErrorMessage(err)}, "")
	}
	if current {
		p.clearSession(c)
		return c.Redirect(http.StatusSeeOther, "/signin")
	}
	return done(c, "/tokens", "revoked")
}
