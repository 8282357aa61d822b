package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk/slackapp"
)

// The Slack door's pages: the admins' connection of the org's Slack app
// (/admin/slack) and each person's link to their Slack user
// (/profile/slack). What Slack itself calls is slackapp's, mounted by
// mountSlackRoutes.

// mountSlackRoutes adds the two routes Slack calls. They take no session
// and no CSRF token, and the form is not parsed before them: slackapp
// verifies Slack's signature over the raw body instead.
func (p *Pages) mountSlackRoutes(e *echo.Echo) {
	if p.slack == nil {
		return
	}
	e.POST(slackapp.InteractionsPath, signedBySlack(p.slack.Interactions))
	e.POST(slackapp.EventsPath, signedBySlack(p.slack.Events))
}

// signedBySlack serves a route of Slack's: what it refuses reaches the
// server's error handler, as every route's refusals do.
func signedBySlack(h func(http.ResponseWriter, *http.Request) error) echo.HandlerFunc {
	return func(c echo.Context) error { return h(c.Response(), c.Request()) }
}

// mountSlackProfile adds a person's Slack link pages.
func (p *Pages) mountSlackProfile(r routes) {
	if p.slack == nil {
		return
	}
	r.GET("/profile/slack", p.slackProfilePage)
	r.POST("/profile/slack/link", p.slackLink)
	r.POST("/profile/slack/unlink", p.slackUnlink)
	r.GET(slackapp.ConfirmPath+":token", p.slackConfirmPage)
	r.POST(slackapp.ConfirmPath+":token", p.slackConfirm)
}

// mountSlackAdmin adds the admins' Slack app page (behind adminOnly).
func (p *Pages) mountSlackAdmin(r routes) {
	if p.slack == nil {
		return
	}
	r.GET("/admin/slack", p.slackAdminPage)
	r.POST("/admin/slack", p.slackConnect)
	r.POST("/admin/slack/disconnect", p.slackDisconnect)
}

var slackFlash = map[string]string{
	"sent":         "A message with a link is on its way to you in Slack. Open it here, in this browser, within 15 minutes.",
	"linked":       "Your Slack account is linked: questions and drafts waiting for you now reach you there too.",
	"unlinked":     "Unlinked. Nothing reaches you in Slack any more, and no Slack button acts for you.",
	"connected":    "Slack app connected. Its bot token and signing secret are kept and never shown again.",
	"disconnected": "Slack app disconnected, and every link of your members to it removed.",
}

// slackProfileData is the person's Slack page.
type slackProfileData struct {
	CSRF      string
	Connected bool
	Link      *slackapp.Link
	MemberID  string
	Error     string
}

func (p *Pages) slackProfilePage(c echo.Context) error {
	return p.slackProfile(c, http.StatusOK, &slackProfileData{}, flash(c, slackFlash))
}

// slackProfile renders the person's Slack page around d.
func (p *Pages) slackProfile(c echo.Context, status int, d *slackProfileData, flashed string) error {
	ctx, m := c.Request().Context(), me(c)
	var err error
	if d.Link, err = p.slack.LinkOf(ctx, m.Caller()); err != nil {
		return err
	}
	if d.Connected, err = p.slack.Connected(ctx, m.OrgID); err != nil {
		return err
	}
	d.CSRF = csrfToken(c)
	return p.app(c, status, "slack-profile", &page{Section: "profile", Title: "Slack", Data: d, Flash: flashed})
}

func (p *Pages) slackLink(c echo.Context) error {
	start, d := time.Now(), &slackProfileData{MemberID: c.FormValue("slack_user_id")}
	err := p.slack.StartLink(c.Request().Context(), me(c).Caller(), d.MemberID)
	p.recordAction(c, "web:slack_link_sent", start, err)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			d.Error = msg
			return p.slackProfile(c, status, d, "")
		})
	}
	return done(c, "/profile/slack", "sent")
}

func (p *Pages) slackUnlink(c echo.Context) error {
	start := time.Now()
	err := p.slack.Unlink(c.Request().Context(), me(c).Caller())
	p.recordAction(c, "web:slack_unlink", start, err)
	if err != nil {
		return err
	}
	return done(c, "/profile/slack", "unlinked")
}

// slackConfirmPage asks the person to confirm the link of a DM's URL: a
// GET changes nothing, so that Slack's or a mail client's look at the URL
// links nobody.
func (p *Pages) slackConfirmPage(c echo.Context) error {
	if err := p.slack.PendingLink(c.Request().Context(), me(c).Caller(), c.Param("token")); err != nil {
		return err
	}
	return p.app(c, http.StatusOK, "slack-confirm", &page{Section: "profile", Title: "Link Slack", Data: map[string]string{"CSRF": csrfToken(c), "Token": c.Param("token")}})
}

func (p *Pages) slackConfirm(c echo.Context) error {
	start := time.Now()
	err := p.slack.ConfirmLink(c.Request().Context(), me(c).Caller(), c.Param("token"))
	p.recordAction(c, "web:slack_link", start, err)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			return p.slackProfile(c, status, &slackProfileData{Error: msg}, "")
		})
	}
	return done(c, "/profile/slack", "linked")
}

// slackAdminData is the admins' Slack page.
type slackAdminData struct {
	CSRF     string
	Status   slackapp.Status
	Manifest string
	Error    string
}

func (p *Pages) slackAdminPage(c echo.Context) error {
	return p.slackAdmin(c, http.StatusOK, &slackAdminData{}, flash(c, slackFlash))
}

// slackAdmin renders the admins' Slack page around d.
func (p *Pages) slackAdmin(c echo.Context, status int, d *slackAdminData, flashed string) error {
	var err error
	if d.Status, err = p.slack.Status(c.Request().Context(), me(c).Caller()); err != nil {
		return err
	}
	d.CSRF, d.Manifest = csrfToken(c), slackapp.Manifest(p.publicURL(c))
	return p.app(c, status, "slack-admin", &page{Section: "admin", Title: "Slack", Data: d, Flash: flashed})
}

// slackConnect stores the org's Slack app. Like the settings that weaken
// oversight, it takes a passkey verification where the org asks for
// passkeys: a Slack app decides for its members from then on.
func (p *Pages) slackConnect(c echo.Context) error {
	start, ctx, m := time.Now(), c.Request().Context(), me(c)
	org, err := p.orgs.Org(ctx, m.OrgID)
	if err != nil {
		return err
	}
	if org.AsksForPasskeys() && !m.PasskeyVerifiedRecently(time.Now()) {
		// The secrets are not carried through the step-up page.
		return p.stepUp(c, http.StatusUnauthorized, "Your organization asks for passkeys, and connecting a Slack app lets your members decide from Slack: it takes a passkey verification of yours. Nothing was changed: verify with your passkey, then enter the token and the secret again.",
			"", nil, "/admin/slack")
	}
	err = p.slack.Connect(ctx, m.Caller(), c.FormValue("bot_token"), c.FormValue("signing_secret"))
	p.recordAction(c, "web:slack_connect", start, err)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			return p.slackAdmin(c, status, &slackAdminData{Error: msg}, "")
		})
	}
	return done(c, "/admin/slack", "connected")
}

func (p *Pages) slackDisconnect(c echo.Context) error {
	start := time.Now()
	err := p.slack.Disconnect(c.Request().Context(), me(c).Caller())
	p.recordAction(c, "web:slack_disconnect", start, err)
	if err != nil {
		return err
	}
	return done(c, "/admin/slack", "disconnected")
}
