package web

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/notify"
)

// SetNotify gives the pages the notifications service, for the profile's
// notification settings; without it that page says notifications are off.
func (p *Pages) SetNotify(n *notify.Service) { p.notify = n }

// mountNotifications adds the profile's notification section: the
// person's settings, webhooks and delivery log, and for admins the org's
// settings, webhooks and failures.
func (p *Pages) mountNotifications(r routes) {
	r.GET("/profile/notifications", p.notificationsPage)
	r.POST("/profile/notifications", p.notificationsSubmit)
	r.POST("/profile/notifications/webhooks", p.webhookAdd)
	r.POST("/profile/notifications/webhooks/delete", p.webhookDelete)
	r.POST("/profile/notifications/webhooks/test", p.webhookTest)
	r.POST("/profile/notifications/webhooks/rotate", p.webhookRotate)
	r.POST("/profile/notifications/deliveries/redeliver", p.redeliver)
	r.POST("/profile/notifications/org", p.orgNotificationsSubmit)
	r.POST("/profile/notifications/push", p.pushSubscribe)
	r.POST("/profile/notifications/push/delete", p.pushDelete)
}

var notifyFlash = map[string]string{
	"settings":        "Your notification settings are saved.",
	"webhook-deleted": "The webhook is deleted; nothing more is sent to it.",
	"webhook-tested":  "The test event reached the webhook: it answered with success.",
	"redelivered":     "The delivery is on its way again; the log below shows its outcome.",
	"org":             "Your organization's notification settings are saved.",
	"push-on":         "Push notifications are on in this browser.",
	"push-off":        "Push notifications are off in that browser.",
}

// notifyKindRow is one kind of event on the settings form.
type notifyKindRow struct {
	Kind                 notify.Kind
	Label                string
	Email, Webhook, Push bool
}

// weekdays are the working days the form offers, ISO numbered.
var weekdays = []weekday{{1, "Monday", false}, {2, "Tuesday", false}, {3, "Wednesday", false}, {4, "Thursday", false},
	{5, "Friday", false}, {6, "Saturday", false}, {7, "Sunday", false}}

type notificationsData struct {
	Off, EmailOn, Admin bool
	Email               string
	Settings            notify.Settings
	// Kinds are the kinds most people set, shown first; MoreKinds the
	// rest, folded (see notifyKindsFirst).
	Kinds, MoreKinds   []notifyKindRow
	Webhooks, OrgHooks []*notify.Webhook
	// Browsers are where push is on; VAPIDKey is the server's key a
	// browser subscribes with.
	Browsers      []*notify.PushBrowser
	VAPIDKey      string
	Weekdays      []weekday
	Log, Failures []*notify.Delivery
	Org           notify.OrgSettings
	// Created is a webhook just added, or whose secret was just changed
	// (Rotated), with its secret shown this once.
	Created       *notify.Webhook
	CreatedSecret string
	Rotated       bool
	// Error says why the last form failed, Field which form.
	Error, Field string
}

// notifyKindsFirst are the kinds the settings form shows first: what
// waits for the person, and what became of their questions; the others
// (reminders, forwards, information asked and given, held posts, urgent
// posts) fold under "More", so that the form fits a phone.
var notifyKindsFirst = []notify.Kind{notify.KindQuestion, notify.KindDraft, notify.KindAnswered, notify.KindDeclined, notify.KindMention}

// notifyKindLabels say what each kind is, on the settings form.
var notifyKindLabels = map[notify.Kind]string{
	notify.KindQuestion:      "A question waits for you",
	notify.KindDraft:         "Your agent's answer waits for your approval",
	notify.KindPost:          "Your agent's channel post waits for your approval",
	notify.KindAnswered:      "Your question was answered",
	notify.KindDeclined:      "Your question was declined",
	notify.KindMention:       "You were mentioned in a channel",
	notify.KindUrgent:        "An urgent post in a channel of yours",
	notify.KindReminder:      "Reminder: a question to you still waits",
	notify.KindStillWaiting:  "Your question still waits for an answer",
	notify.KindForwarded:     "Your question was forwarded to someone else",
	notify.KindInfoRequested: "Someone needs more information before answering you",
	notify.KindInfoProvided:  "An asker gave the information you asked for",
}

func (p *Pages) notificationsPage(c echo.Context) error {
	return p.notifications(c, http.StatusOK, &notificationsData{}, flash(c, notifyFlash))
}

// notifications renders the page around d with what the person has.
func (p *Pages) notifications(c echo.Context, status int, d *notificationsData, flashed string) error {
	ctx, m := c.Request().Context(), me(c)
	d.Admin = m.IsAdmin()
	if p.notify == nil {
		d.Off = true
		return p.app(c, status, "notifications", &page{Section: "people", Title: "Notifications", Data: d, Flash: flashed})
	}
	d.Off, d.EmailOn = !p.notify.Sending(), p.notify.EmailEnabled()
	u, err := p.orgs.User(ctx, m.OrgID, m.UserID)
	if err != nil {
		return err
	}
	d.Email = u.Email
	if d.Settings, err = p.notify.Settings(ctx, m.Caller()); err != nil {
		return err
	}
	d.Kinds, d.MoreKinds = nil, nil
	for _, k := range notify.Kinds {
		chs := d.Settings.Channels[k]
		row := notifyKindRow{Kind: k, Label: notifyKindLabels[k],
			Email: slices.Contains(chs, notify.ChannelEmail), Webhook: slices.Contains(chs, notify.ChannelWebhook), Push: slices.Contains(chs, notify.ChannelPush)}
		if slices.Contains(notifyKindsFirst, k) {
			d.Kinds = append(d.Kinds, row)
		} else {
			d.MoreKinds = append(d.MoreKinds, row)
		}
	}
	d.Weekdays = nil
	for _, w := range weekdays {
		w.On = slices.Contains(d.Settings.WorkDays, w.N)
		d.Weekdays = append(d.Weekdays, w)
	}
	if d.Webhooks, err = p.notify.Webhooks(ctx, m.OrgID, m.UserID); err != nil {
		return err
	}
	if d.Browsers, err = p.notify.PushBrowsers(ctx, m.Caller()); err != nil {
		return err
	}
	d.VAPIDKey = p.notify.VAPIDPublicKey()
	if d.Log, err = p.notify.DeliveryLog(ctx, m.Caller(), 50); err != nil {
		return err
	}
	if d.Org, err = p.notify.OrgSettings(ctx, m.OrgID); err != nil {
		return err
	}
	if d.Admin {
		if d.OrgHooks, err = p.notify.Webhooks(ctx, m.OrgID, ""); err != nil {
			return err
		}
		if d.Failures, err = p.notify.OrgFailures(ctx, m.OrgID, 50); err != nil {
			return err
		}
	}
	return p.app(c, status, "notifications", &page{Section: "people", Title: "Notifications", Data: d, Flash: flashed})
}

// notifyFailed shows the page again with a form's error; an internal
// error goes to the server's error handler.
func (p *Pages) notifyFailed(c echo.Context, field string, err error) error {
	if ctalk.ErrorCode(err) == ctalk.EInternal {
		return err
	}
	return p.notifications(c, ctalk.HTTPStatus(ctalk.ErrorCode(err)), &notificationsData{Error: ctalk.ErrorMessage(err), Field: field}, "")
}

func (p *Pages) requireNotify() error {
	if p.notify == nil {
		return ctalk.Errorf(ctalk.EUnavailable, "this server has no notifications")
	}
	return nil
}

// notificationsSubmit saves the person's settings from the form: for each
// kind, the channels checked.
func (p *Pages) notificationsSubmit(c echo.Context) error {
	start, m := time.Now(), me(c)
	if err := p.requireNotify(); err != nil {
		return p.notifyFailed(c, "settings", err)
	}
	form, err := c.FormParams()
	if err != nil {
		return p.notifyFailed(c, "settings", ctalk.Errorf(ctalk.EInvalid, "the form could not be read; reload the page and try again"))
	}
	in := notify.Settings{Channels: map[notify.Kind][]string{}, Paused: form.Get("paused") == "on",
		QuietStart: form.Get("quiet_start"), QuietEnd: form.Get("quiet_end"), TimeZone: form.Get("time_zone"),
		UrgentInQuiet: form.Get("urgent_in_quiet") == "on",
		WorkStart:     form.Get("work_start"), WorkEnd: form.Get("work_end")}
	if form.Get("working_hours") != "" {
		// The form showed the working days: none checked is none chosen.
		in.WorkDays = []int{}
	}
	for _, v := range form["work_day"] {
		n, err := strconv.Atoi(v)
		if err != nil {
			return p.notifyFailed(c, "settings", ctalk.Errorf(ctalk.EInvalid, "a working day must be a weekday of the form; reload the page and try again"))
		}
		in.WorkDays = append(in.WorkDays, n)
	}
	for _, k := range notify.Kinds {
		in.Channels[k] = []string{}
		for _, ch := range form["kind."+string(k)] {
			if !slices.Contains(in.Channels[k], ch) {
				in.Channels[k] = append(in.Channels[k], ch)
			}
		}
	}
	_, err = p.notify.SaveSettings(c.Request().Context(), m.Caller(), in)
	p.recordAction(c, "web:update_notification_settings", start, err, m.UserID)
	if err != nil {
		return p.notifyFailed(c, "settings", err)
	}
	return done(c, "/profile/notifications", "settings")
}

// webhookScope is the owner a webhook form acts for: the person, or with
// scope=org and for an admin only, the org ("").
func (p *Pages) webhookScope(c echo.Context) (owner string, err error) {
	m := me(c)
	if c.FormValue("scope") != "org" {
		return m.UserID, nil
	}
	if !m.IsAdmin() {
		return "", ctalk.Errorf(ctalk.EForbidden, "only an admin of your organization can change its webhooks")
	}
	return "", nil
}

// webhookAdd adds a webhook and shows its secret on this response only.
func (p *Pages) webhookAdd(c echo.Context) error {
	start, m := time.Now(), me(c)
	if err := p.requireNotify(); err != nil {
		return p.notifyFailed(c, "webhook", err)
	}
	owner, err := p.webhookScope(c)
	if err != nil {
		return p.notifyFailed(c, "webhook", err)
	}
	w, secret, err := p.notify.AddWebhook(c.Request().Context(), m.OrgID, owner, m.UserID, c.FormValue("url"), c.FormValue("format"))
	p.recordAction(c, "web:add_webhook", start, err, m.UserID)
	if err != nil {
		field := "webhook"
		if owner == "" {
			field = "org-webhook"
		}
		return p.notifyFailed(c, field, err)
	}
	return p.notifications(c, http.StatusOK, &notificationsData{Created: w, CreatedSecret: secret}, "")
}

func (p *Pages) webhookDelete(c echo.Context) error {
	start, m := time.Now(), me(c)
	if err := p.requireNotify(); err != nil {
		return p.notifyFailed(c, "webhook", err)
	}
	owner, err := p.webhookScope(c)
	if err == nil {
		err = p.notify.DeleteWebhook(c.Request().Context(), m.OrgID, owner, c.FormValue("id"))
	}
	p.recordAction(c, "web:delete_webhook", start, err, m.UserID)
	if err != nil {
		return p.notifyFailed(c, "webhook", err)
	}
	return done(c, "/profile/notifications", "webhook-deleted")
}

// orgNotificationsSubmit sets the org's text mode and reminder time.
func (p *Pages) orgNotificationsSubmit(c echo.Context) error {
	start, m := time.Now(), me(c)
	if err := p.requireNotify(); err != nil {
		return p.notifyFailed(c, "org", err)
	}
	if !m.IsAdmin() {
		return p.notifyFailed(c, "org", ctalk.Errorf(ctalk.EForbidden, "only an admin of your organization can change its notification settings"))
	}
	minutes, err := strconv.Atoi(c.FormValue("reminder_minutes"))
	if err != nil {
		return p.notifyFailed(c, "org", ctalk.Errorf(ctalk.EInvalid, "the reminder time must be a whole number of minutes (0 for no reminders)"))
	}
	_, err = p.notify.SaveOrgSettings(c.Request().Context(), m.OrgID, notify.OrgSettings{TextMode: c.FormValue("text_mode"), ReminderMinutes: minutes})
	p.recordAction(c, "web:update_org_notification_settings", start, err, m.UserID)
	if err != nil {
		return p.notifyFailed(c, "org", err)
	}
	return done(c, "/profile/notifications", "org")
}

// weekday is a working day's checkbox.
type weekday struct {
	N    int
	Name string
	On   bool
}

// pushSubscribe stores the browser's push subscription that
// static/push.js posts (endpoint and keys, as PushSubscription.toJSON()
// gives them), as a form with the page's CSRF token.
func (p *Pages) pushSubscribe(c echo.Context) error {
	start, m := time.Now(), me(c)
	if err := p.requireNotify(); err != nil {
		return p.notifyFailed(c, "push", err)
	}
	in := notify.PushSubscription{Endpoint: c.FormValue("endpoint"), P256dh: c.FormValue("p256dh"), Auth: c.FormValue("auth"), UserAgent: c.Request().UserAgent()}
	_, err := p.notify.SubscribePush(c.Request().Context(), m.Caller(), in)
	p.recordAction(c, "web:subscribe_push", start, err, m.UserID)
	if err != nil {
		return p.notifyFailed(c, "push", err)
	}
	return done(c, "/profile/notifications", "push-on")
}

// pushDelete turns push off in a browser, named by its id (the list's
// forms) or its endpoint (static/push.js, after unsubscribing it).
func (p *Pages) pushDelete(c echo.Context) error {
	start, m := time.Now(), me(c)
	if err := p.requireNotify(); err != nil {
		return p.notifyFailed(c, "push", err)
	}
	which := cmp.Or(c.FormValue("id"), c.FormValue("endpoint"))
	err := p.notify.UnsubscribePush(c.Request().Context(), m.Caller(), which)
	p.recordAction(c, "web:unsubscribe_push", start, err, m.UserID)
	if err != nil {
		return p.notifyFailed(c, "push", err)
	}
	return done(c, "/profile/notifications", "push-off")
}

// webhookField is the form a webhook form's error shows next to: the
// person's webhooks, or the org's (owner empty).
func webhookField(owner string) string {
	if owner == "" {
		return "org-webhook"
	}
	return "webhook"
}

// webhookTest sends a test event to a webhook and says what it answered.
func (p *Pages) webhookTest(c echo.Context) error {
	start, m := time.Now(), me(c)
	if err := p.requireNotify(); err != nil {
		return p.notifyFailed(c, "webhook", err)
	}
	owner, err := p.webhookScope(c)
	if err == nil {
		err = p.notify.TestWebhook(c.Request().Context(), m.OrgID, owner, c.FormValue("id"))
	}
	p.recordAction(c, "web:test_webhook", start, err, m.UserID)
	if err != nil {
		return p.notifyFailed(c, webhookField(owner), err)
	}
	return done(c, "/profile/notifications", "webhook-tested")
}

// webhookRotate gives a webhook a new signing secret and shows it on this
// response only.
func (p *Pages) webhookRotate(c echo.Context) error {
	start, m := time.Now(), me(c)
	if err := p.requireNotify(); err != nil {
		return p.notifyFailed(c, "webhook", err)
	}
	owner, err := p.webhookScope(c)
	var w *notify.Webhook
	var secret string
	if err == nil {
		w, secret, err = p.notify.RotateWebhookSecret(c.Request().Context(), m.OrgID, owner, c.FormValue("id"))
	}
	p.recordAction(c, "web:rotate_webhook_secret", start, err, m.UserID)
	if err != nil {
		return p.notifyFailed(c, webhookField(owner), err)
	}
	return p.notifications(c, http.StatusOK, &notificationsData{Created: w, CreatedSecret: secret, Rotated: true}, "")
}

// redeliver sends a logged delivery to a webhook again: the person's own,
// or with scope=org, an admin's of the org's webhooks.
func (p *Pages) redeliver(c echo.Context) error {
	start, m := time.Now(), me(c)
	if err := p.requireNotify(); err != nil {
		return p.notifyFailed(c, "webhook", err)
	}
	owner, err := p.webhookScope(c)
	if err == nil {
		err = p.notify.Redeliver(c.Request().Context(), m.OrgID, owner, c.FormValue("id"))
	}
	p.recordAction(c, "web:redeliver", start, err, m.UserID)
	if err != nil {
		return p.notifyFailed(c, webhookField(owner), err)
	}
	return done(c, "/profile/notifications", "redelivered")
}
