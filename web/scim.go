package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/scim"
)

// The admins' SCIM page (/admin/scim): the tokens the org's identity
// provider calls /scim/v2 with, made and revoked here only, by a person.

// mountSCIMAdmin adds the admins' SCIM page (behind adminOnly).
func (p *Pages) mountSCIMAdmin(r routes) {
	if p.scim == nil {
		return
	}
	r.GET("/admin/scim", p.scimAdminPage)
	r.POST("/admin/scim", p.scimCreateToken)
	r.POST("/admin/scim/revoke", p.scimRevokeToken)
}

// scimAdminData is the admins' SCIM page.
type scimAdminData struct {
	CSRF      string
	URL       string
	Tokens    []*scim.Token
	Lifetimes []int
	Label     string
	Days      int
	Error     string
	// Created is the token just made, shown this once.
	Created *createdToken
}

var scimFlash = map[string]string{
	"revoked": "Revoked. The identity provider is refused from its next call on; make a new token for it if it should go on.",
}

func (p *Pages) scimAdminPage(c echo.Context) error {
	return p.scimAdmin(c, http.StatusOK, &scimAdminData{Days: auth.PersonalTokenLifetimes[2]}, flash(c, scimFlash))
}

// scimAdmin renders the admins' SCIM page around d.
func (p *Pages) scimAdmin(c echo.Context, status int, d *scimAdminData, flashed string) error {
	var err error
	if d.Tokens, err = p.scim.Tokens(c.Request().Context(), me(c).OrgID); err != nil {
		return err
	}
	d.CSRF, d.URL, d.Lifetimes = csrfToken(c), p.publicURL(c)+scim.Path, auth.PersonalTokenLifetimes
	return p.app(c, status, "scim-admin", &page{Section: "admin", Title: "SCIM provisioning", Data: d, Flash: flashed})
}

// scimCreateToken makes a SCIM token and shows it on this response only.
// A SCIM token creates members and removes them, admins included: like
// the settings that weaken oversight, it takes a passkey verification
// where the org asks for passkeys.
func (p *Pages) scimCreateToken(c echo.Context) error {
	start, ctx, m := time.Now(), c.Request().Context(), me(c)
	d := &scimAdminData{Label: c.FormValue("label")}
	d.Days, _ = strconv.Atoi(c.FormValue("days"))
	org, err := p.orgs.Org(ctx, m.OrgID)
	if err != nil {
		return err
	}
	if org.AsksForPasskeys() && !m.PasskeyVerifiedRecently(time.Now()) {
		return p.stepUp(c, http.StatusUnauthorized, "Your organization asks for passkeys, and a SCIM token lets your identity provider add and remove members: it takes a passkey verification of yours. Nothing was made yet: verify with your passkey, and the token is made.",
			c.Request().URL.Path, replayed(c), "")
	}
	raw, t, err := p.scim.CreateToken(ctx, m.Caller(), d.Label, d.Days)
	p.recordAction(c, "web:create_scim_token", start, err)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			d.Error = msg
			return p.scimAdmin(c, status, d, "")
		})
	}
	return p.scimAdmin(c, http.StatusOK, &scimAdminData{Days: auth.PersonalTokenLifetimes[2], Created: &createdToken{Raw: raw, Label: t.Label, ExpiresAt: t.ExpiresAt}}, "")
}

func (p *Pages) scimRevokeToken(c echo.Context) error {
	start := time.Now()
	err := p.scim.RevokeToken(c.Request().Context(), me(c).OrgID, c.FormValue("id"))
	p.recordAction(c, "web:revoke_scim_token", start, err)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			return p.scimAdmin(c, status, &scimAdminData{Days: auth.PersonalTokenLifetimes[2], Error: msg}, "")
		})
	}
	return done(c, "/admin/scim", "revoked")
}
