package tools

import (
	"context"
	"net/url"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/notify"
)

// registerNotifyTools adds the tools of notifications: agents read their
// person's settings, and can change none of them.
func (s *Server) registerNotifyTools() {
	s.registerGetNotificationSettings()
}

// notifyWebhook is a webhook as an agent sees it: its host only, since a
// Slack or Teams URL is itself a secret.
type notifyWebhook struct {
	ID       string `json:"webhook_id"`
	Host     string `json:"host"`
	Format   string `json:"format"`
	OrgWide  bool   `json:"org_wide"`
	Disabled bool   `json:"disabled"`
	Reason   string `json:"disabled_reason,omitempty"`
}

type notificationSettingsResult struct {
	Enabled      bool                `json:"notifications_enabled" jsonschema:"false when this server sends no notifications (no PUBLIC_URL)"`
	EmailEnabled bool                `json:"email_enabled" jsonschema:"whether this server sends email"`
	Settings     *notify.Settings    `json:"settings,omitempty"`
	Org          *notify.OrgSettings `json:"org,omitempty"`
	Webhooks     []notifyWebhook     `json:"webhooks"`
	Note         string              `json:"note"`
}

func (s *Server) registerGetNotificationSettings() {
	addIdentifiedTool(s, mcp.NewTool("get_notification_settings",
		mcp.WithDescription("Show how your person is notified outside ctalk: per kind of event its channels (email, webhook, push; none: in the app only), quiet and working hours, pause, their webhooks (host only) and the org's text setting. Read only: your person changes them in the web app."),
		authTokenParam,
		annotations(true, false, true),
	), func(ctx context.Context, sess *auth.Session, in *noArgs) (*notificationSettingsResult, error) {
		res := &notificationSettingsResult{Webhooks: []notifyWebhook{}, Note: "only your person can change these, on their profile page in ctalk's web app"}
		if s.notify == nil {
			res.Note = "this server sends no notifications"
			return res, nil
		}
		if !s.notify.Sending() {
			res.Note = "this server sends no notifications: its operator has not set PUBLIC_URL; " + res.Note
		}
		res.Enabled, res.EmailEnabled = s.notify.Sending(), s.notify.Sending() && s.notify.EmailEnabled()
		set, err := s.notify.Settings(ctx, sess.Caller())
		if err != nil {
			return nil, err
		}
		org, err := s.notify.OrgSettings(ctx, sess.OrgID)
		if err != nil {
			return nil, err
		}
		res.Settings, res.Org = &set, &org
		for _, owner := range []string{sess.UserID, ""} {
			hooks, err := s.notify.Webhooks(ctx, sess.OrgID, owner)
			if err != nil {
				return nil, err
			}
			for _, w := range hooks {
				host := ""
				if u, err := url.Parse(w.URL); err == nil {
					host = u.Host
				}
				res.Webhooks = append(res.Webhooks, notifyWebhook{ID: w.ID, Host: host, Format: w.Format, OrgWide: w.Org, Disabled: w.DisabledAt != nil, Reason: ctalk.Shorten(w.DisabledReason, 200)})
			}
		}
		return res, nil
	})
}
