package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/access"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/orgs"
)

// Passkeys: the ceremonies are JSON calls that static/passkey.js makes
// around navigator.credentials (the one part of the app that needs
// JavaScript): begin returns the options for the browser, finish takes the
// authenticator's answer. Each is a POST with the page's CSRF token in its
// header.

// deviceCookie holds the browser's device cookie (see
// auth.SignInOnDevice); over https it carries hostOnly's prefix.
const deviceCookie = "ctalk_device"

// mountPasskeySignIn adds the passkey sign-in calls, open to anyone.
func (p *Pages) mountPasskeySignIn(e *echo.Echo, mw []echo.MiddlewareFunc) {
	e.POST("/passkeys/signin/begin", p.passkeySignInBegin, mw...)
	e.POST("/passkeys/signin/finish", p.passkeySignInFinish, mw...)
}

// mountPasskeys adds the signed-in person's passkey calls and pages: adding
// one, verifying with one (for an approval or a removal), removing one.
func (p *Pages) mountPasskeys(r routes) {
	r.POST("/passkeys/register/begin", p.passkeyRegisterBegin)
	r.POST("/passkeys/register/finish", p.passkeyRegisterFinish)
	r.POST("/passkeys/verify/begin", p.passkeyVerifyBegin)
	r.POST("/passkeys/verify/finish", p.passkeyVerifyFinish)
	r.GET("/verify", p.verifyPage)
	r.POST("/profile/passkeys/:passkey_id/remove", p.removePasskey)
}

// passkeyAnswer is what the page sends to a finish call.
type passkeyAnswer struct {
	Ceremony   string          `json:"ceremony"`
	Credential json.RawMessage `json:"credential"`
	Name       string          `json:"name"`
	Next       string          `json:"next"`
}

// maxPasskeyAnswer bounds the body of a finish call.
const maxPasskeyAnswer = 64 << 10

func readAnswer(c echo.Context) (*passkeyAnswer, error) {
	b, err := io.ReadAll(io.LimitReader(c.Request().Body, maxPasskeyAnswer+1))
	if err != nil || len(b) > maxPasskeyAnswer {
		return nil, ctalk.Errorf(ctalk.EInvalid, "the passkey answer could not be read; try again")
	}
	var a passkeyAnswer
	if err := json.Unmarshal(b, &a); err != nil || len(a.Credential) == 0 {
		return nil, ctalk.Errorf(ctalk.EInvalid, "the passkey answer is not what this page sends; reload the page and try again")
	}
	return &a, nil
}

// passkeyJSON answers a passkey call: v, or the error's message with its
// status (an internal error is logged, and says only that).
func (p *Pages) passkeyJSON(c echo.Context, v any, err error) error {
	if err != nil {
		code := ctalk.ErrorCode(err)
		msg := ctalk.ErrorMessage(err)
		if code == ctalk.EInternal {
			p.cfg.Logger.Error("passkey call failed", "path", c.Path(), "error", err)
			msg = "Something went wrong on our side. Try again in a moment."
		}
		return c.JSON(ctalk.HTTPStatus(code), map[string]string{"error": msg})
	}
	return c.JSON(http.StatusOK, v)
}

func (p *Pages) publicURL(c echo.Context) string { return p.cfg.PublicURL(c.Request()) }

func (p *Pages) passkeySignInBegin(c echo.Context) error {
	cer, err := p.auth.BeginPasskeySignIn(c.Request().Context(), p.publicURL(c), c.RealIP())
	return p.passkeyJSON(c, cer, err)
}

func (p *Pages) passkeySignInFinish(c echo.Context) error {
	start := time.Now()
	a, err := readAnswer(c)
	if err != nil {
		return p.passkeyJSON(c, nil, err)
	}
	ctx := c.Request().Context()
	raw, sess, err := p.auth.FinishPasskeySignIn(ctx, p.publicURL(c), a.Ceremony, a.Credential)
	var cloned *auth.ClonedPasskeyError
	if errors.As(err, &cloned) {
		p.recordPasskeyRefusal(c, start, cloned)
	}
	if err != nil {
		return p.passkeyJSON(c, nil, err)
	}
	p.setSession(c, raw)
	// The passkey named the person, and so the org the rest acts in.
	ctx = ctalk.WithOrg(ctx, sess.OrgID)
	if dev, err := p.auth.IssueDevice(ctx, sess.OrgID, sess.UserID); err == nil {
		p.setDevice(c, dev)
	}
	return p.passkeyJSON(c, map[string]string{"next": localPath(a.Next, "/inbox")}, nil)
}

// recordPasskeyRefusal writes the refusal of a cloned passkey to the
// owner's org's audit log, with the passkey's id (never a secret).
func (p *Pages) recordPasskeyRefusal(c echo.Context, start time.Time, e *auth.ClonedPasskeyError) {
	p.cfg.Logger.Warn("passkey refused: its signature counter went back", "org_id", e.OrgID, "user_id", e.UserID)
	if p.audit == nil {
		return
	}
	p.audit.Record(audit.Event{At: start.UTC(), OrgID: e.OrgID, UserID: e.UserID, Tool: "web:passkey_cloned", Outcome: string(ctalk.EForbidden),
		DurationMS: float64(time.Since(start).Microseconds()) / 1000, RequestID: c.Response().Header().Get(echo.HeaderXRequestID), Factor: auth.FactorPasskey})
}

func (p *Pages) passkeyRegisterBegin(c echo.Context) error {
	cer, err := p.auth.BeginPasskeyRegistration(c.Request().Context(), me(c), p.publicURL(c))
	return p.passkeyJSON(c, cer, err)
}

// passkeyRegisterFinish stores a new passkey. Someone who has a passkey
// verified with it first (auth refuses it otherwise) and is told by mail;
// the first passkey of someone in an org whose approval_factor is passkey
// waits for the link mailed to them, or for an admin's approval.
func (p *Pages) passkeyRegisterFinish(c echo.Context) error {
	start, ctx, m := time.Now(), c.Request().Context(), me(c)
	a, err := readAnswer(c)
	if err != nil {
		return p.passkeyJSON(c, nil, err)
	}
	org, err := p.orgs.Org(ctx, m.OrgID)
	if err != nil {
		return p.passkeyJSON(c, nil, err)
	}
	pk, token, err := p.auth.FinishPasskeyRegistration(ctx, m, p.publicURL(c), a.Ceremony, a.Name, a.Credential, org.ApprovalFactor == orgs.FactorPasskey)
	p.recordAction(c, "web:add_passkey", start, err)
	if err != nil {
		return p.passkeyJSON(c, nil, err)
	}
	if token == "" {
		p.tellPasskey(ctx, m.OrgID, m.UserID, pk.Name, access.PasskeyAdded, "")
		return p.passkeyJSON(c, map[string]string{"next": "/profile?done=passkey-added#passkeys"}, nil)
	}
	p.tellSecurity(ctx, m.OrgID, m.UserID, fmt.Sprintf("A passkey %q was added to your account; it works once confirmed by the link mailed to you or by an admin.", pk.Name))
	next := "/profile?done=passkey-pending-admin#passkeys"
	if mailed, err := p.access.MailPasskeyConfirm(ctx, m.OrgID, m.UserID, pk.Name, token); err != nil {
		return p.passkeyJSON(c, nil, err)
	} else if mailed {
		next = "/profile?done=passkey-pending#passkeys"
	}
	return p.passkeyJSON(c, map[string]string{"next": next}, nil)
}

func (p *Pages) passkeyVerifyBegin(c echo.Context) error {
	cer, err := p.auth.BeginPasskeyVerify(c.Request().Context(), me(c), p.publicURL(c))
	return p.passkeyJSON(c, cer, err)
}

func (p *Pages) passkeyVerifyFinish(c echo.Context) error {
	start := time.Now()
	a, err := readAnswer(c)
	if err == nil {
		first := me(c).PasskeyAt.IsZero()
		err = p.auth.FinishPasskeyVerify(c.Request().Context(), me(c), p.publicURL(c), a.Ceremony, a.Credential)
		if err == nil && first && p.sso != nil {
			if held, _ := p.sso.BreakGlass(c.Request().Context(), me(c)); held {
				p.brokeGlass(c.Request().Context(), c, me(c))
			}
		}
		var cloned *auth.ClonedPasskeyError
		if errors.As(err, &cloned) {
			p.recordPasskeyRefusal(c, start, cloned)
		}
	}
	return p.passkeyJSON(c, map[string]string{"next": localPath(a.nextOr(""), "/inbox")}, err)
}

func (a *passkeyAnswer) nextOr(fallback string) string {
	if a == nil {
		return fallback
	}
	return a.Next
}

// verifyData is the step-up page: why a passkey is asked for, and the form
// that goes on once it is verified (the action asked for, repeated with
// what the person typed), or the page to go back to.
type verifyData struct {
	Why string
	// Action and Fields repeat the form that asked; Next is the page to
	// return to when there is none.
	Action string
	Fields url.Values
	Next   string
	// HasPasskey is false for someone who has none yet.
	HasPasskey bool
}

// verifyPage asks for a passkey verification, then returns to next.
func (p *Pages) verifyPage(c echo.Context) error {
	return p.stepUp(c, http.StatusOK, "Verify with your passkey to go on.", "", nil, localPath(c.QueryParam("next"), "/inbox"))
}

// stepUp renders the step-up page for an action that needs a fresh passkey
// verification: the page verifies, then sends the form again.
func (p *Pages) stepUp(c echo.Context, status int, why, action string, fields url.Values, next string) error {
	m := me(c)
	keys, err := p.auth.Passkeys(c.Request().Context(), m.OrgID, m.UserID)
	if err != nil {
		return err
	}
	return p.app(c, status, "verify", &page{Title: "Verify it is you", Data: verifyData{Why: why, Action: action, Fields: fields, Next: next, HasPasskey: confirmed(keys) > 0}})
}

// confirmed counts the passkeys of keys that sign in and verify: not those
// waiting for confirmation.
func confirmed(keys []auth.Passkey) int {
	n := 0
	for _, k := range keys {
		if !k.Pending {
			n++
		}
	}
	return n
}

// replayed is the posted form of the request without its CSRF token, for
// the step-up page to send again.
func replayed(c echo.Context) url.Values {
	out := url.Values{}
	for k, v := range c.Request().PostForm {
		if k != csrfField {
			out[k] = v
		}
	}
	return out
}

// approvalFactor lets an approval action through when the person's org asks
// only for a session, or when their session holds a passkey verification of
// the last auth.PasskeyFresh; else it asks for one on the spot, with the
// action to send again afterwards. Nothing is changed until then.
func (p *Pages) approvalFactor(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		m := me(c)
		org, err := p.orgs.Org(c.Request().Context(), m.OrgID)
		if err != nil {
			return err
		}
		if org.ApprovalFactor != orgs.FactorPasskey || m.PasskeyVerifiedRecently(time.Now()) {
			return next(c)
		}
		return p.stepUp(c, http.StatusUnauthorized, "Your organization asks for a passkey for every approval. Nothing was changed yet: verify with your passkey, and your action is sent.",
			c.Request().URL.Path, replayed(c), "")
	}
}

// passkeysFlash says what the passkey actions did.
var passkeysFlash = map[string]string{
	"passkey-added":         "Passkey added. You can sign in with it without typing your ids, and verify with it where your organization asks.",
	"passkey-pending":       "Passkey added, waiting for your confirmation: your organization asks for a passkey before every approval, so your first one works once you open the link just mailed to you.",
	"passkey-pending-admin": "Passkey added, waiting for an admin's approval: your organization asks for a passkey before every approval, and no link can be mailed to you, so ask an admin to approve it on your member page. An admin approves with a passkey of their own; where no admin has one, the operator of this ctalk server can confirm it.",
	"passkey-removed":       "Passkey removed. It no longer signs you in.",
	"passkey-required":      "Your organization asks every member to have a passkey. Add one below: it takes a few seconds.",
}

// removePasskey removes one of my passkeys after a fresh verification: a
// passkey verification in this session of the last few minutes, or, for my
// only passkey, my password. Without either it asks for a verification and
// sends the removal again.
func (p *Pages) removePasskey(c echo.Context) error {
	start, m := time.Now(), me(c)
	pk, err := p.auth.RemovePasskey(c.Request().Context(), m, c.Param("passkey_id"), c.FormValue("password"), c.RealIP())
	p.recordAction(c, "web:remove_passkey", start, err)
	switch ctalk.ErrorCode(err) {
	case "":
		p.tellPasskey(c.Request().Context(), m.OrgID, m.UserID, pk.Name, access.PasskeyRemoved, "")
		return done(c, "/profile#passkeys", "passkey-removed")
	case ctalk.EForbidden:
		return p.stepUp(c, http.StatusUnauthorized, ctalk.ErrorMessage(err)+".", c.Request().URL.Path, replayed(c), "")
	case ctalk.EInternal:
		return err
	case ctalk.EUnauthorized:
		err = ctalk.Errorf(ctalk.EUnauthorized, "This is not your password. The passkey was not removed.")
	}
	// Shown next to the passkeys, a passkey not found among them too.
	return p.renderProfile(c, ctalk.HTTPStatus(ctalk.ErrorCode(err)), m.UserID, nil, map[string]string{"passkeys": ctalk.ErrorMessage(err)})
}

func (p *Pages) setDevice(c echo.Context, raw string) {
	c.SetCookie(&http.Cookie{Name: cookieName(deviceCookie, p.secure(c.Request())), Value: raw, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: p.secure(c.Request()), MaxAge: int(auth.DeviceCookieTTL.Seconds())})
}

func (p *Pages) device(c echo.Context) string {
	ck, err := c.Cookie(cookieName(deviceCookie, p.secure(c.Request())))
	if err != nil {
		return ""
	}
	return ck.Value
}

// afterSignIn is where a person who just signed in with a password goes:
// next, or their profile's passkeys when their org asks every member for a
// passkey and they have none yet.
func (p *Pages) afterSignIn(c echo.Context, sess *auth.Session, next string) string {
	ctx := c.Request().Context()
	org, err := p.orgs.Org(ctx, sess.OrgID)
	if err != nil || !org.RequirePasskey {
		return next
	}
	if keys, err := p.auth.Passkeys(ctx, sess.OrgID, sess.UserID); err == nil && confirmed(keys) == 0 {
		return "/profile?done=passkey-required#passkeys"
	}
	return next
}

// tellPasskey tells the member userID that their passkey name was added,
// removed or approved by the admin adminID (see access.TellPasskey): by
// mail, and by their webhooks and browsers (tellSecurity).
func (p *Pages) tellPasskey(ctx context.Context, orgID, userID, name, change, adminID string) {
	p.access.TellPasskey(ctx, orgID, userID, name, change, adminID)
	text := fmt.Sprintf("A passkey %q was %s on your account.", name, change)
	if adminID != "" {
		text = fmt.Sprintf("A passkey %q of your account was %s by an admin (%s).", name, change, adminID)
	}
	p.tellSecurity(ctx, orgID, userID, text)
}

// tellSecurity queues a security notice for the member userID, which goes
// by their webhooks and browsers whatever their settings; one that cannot
// be queued is logged, the change it tells of being made already.
func (p *Pages) tellSecurity(ctx context.Context, orgID, userID, text string) {
	if p.notify == nil {
		return
	}
	if err := p.notify.TellSecurity(context.WithoutCancel(ctx), orgID, userID, text); err != nil {
		p.cfg.Logger.Error("security notice not queued", "org_id", orgID, "user_id", userID, "error", err)
	}
}
