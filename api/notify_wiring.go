package api

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/orgs"
)

// startNotify wires notifications: the service over d, its settings page
// and tool, its metrics and unsubscribe route; and, when PUBLIC_URL gives
// their links a base, the inbox and channels queueing into it in their
// transactions and its worker, which runs until ctx ends. Without
// PUBLIC_URL nothing is queued, and the log says so.
func (s *Server) startNotify(ctx context.Context, d *db.DB, cfg notify.Config, o *orgs.Service, in *inbox.Service, ch *channels.Service) *notify.Service {
	if cfg == (notify.Config{}) {
		cfg = notify.DefaultConfig()
	}
	cfg.PublicURL, cfg.Logger = s.cfg.PublicURL, s.log
	if s.cfg.Mail.Enabled() {
		cfg.Mail = s.mailer
	}
	dir := func(ctx context.Context, orgID, userID string) (string, string, error) {
		u, err := o.User(ctx, orgID, userID)
		if err != nil {
			return "", "", err
		}
		return u.Name, u.Email, nil
	}
	n := notify.NewService(d, cfg, dir)
	s.notify = n
	s.web.SetNotify(n)
	s.metrics.registry.MustRegister(n.Collectors()...)
	h := echo.WrapHandler(n.UnsubscribeHandler())
	s.echo.GET(notify.UnsubscribePath, h)
	s.echo.POST(notify.UnsubscribePath, h)
	if !n.Sending() {
		s.log.Warn("notifications are off: set PUBLIC_URL, the base of the links they carry, to send them by email and webhooks")
		return n
	}
	if err := n.Start(ctx); err != nil {
		s.log.Error("notifications: cannot start; the worker retries", "error", err)
	}
	in.Notify(n)
	ch.Notify(n)
	go n.Run(ctx)
	return n
}
