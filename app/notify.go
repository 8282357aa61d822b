package app

import (
	"context"
	"log/slog"

	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/mail"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/orgs"
)

// startNotify builds the notifications service over d: its settings page,
// tool, metrics and unsubscribe route are mounted by the caller; and, when
// PUBLIC_URL gives their links a base, the inbox and channels queue into it
// in their transactions and its worker runs among work until it stops, woken on
// Postgres by the events every replica queues. Without
// PUBLIC_URL nothing is queued, and the log says so.
func startNotify(work *workers, d *db.DB, w Wiring, log *slog.Logger, sender mail.Sender, o *orgs.Service, in *inbox.Service, ch *channels.Service) *notify.Service {
	cfg := w.Notify
	if cfg == (notify.Config{}) {
		cfg = notify.DefaultConfig()
	}
	cfg.PublicURL, cfg.Logger = w.linkURL(), log
	if w.Mail.Enabled() || w.Sender != nil {
		cfg.Mail = sender
	}
	// A person's name and address come from the member cache, which every
	// change of a member forgets on every replica, as whoami's do: an ask
	// whose recipient is reachable only by email then costs no look-up.
	dir := func(ctx context.Context, orgID, userID string) (string, string, error) {
		u, _, err := o.Member(ctx, orgID, userID)
		if err != nil {
			return "", "", err
		}
		return u.Name, u.Email, nil
	}
	n := notify.NewService(d, cfg, dir)
	n.SkipAway(o.AwayUntil)
	n.SkipDeleting(func(ctx context.Context, orgID string) (bool, error) {
		d, err := o.ScheduledDeletion(ctx, orgID)
		return d != nil, err
	})
	if w.API.Audit != nil {
		// The audit streams need no PUBLIC_URL: they carry no links.
		n.SetAuditSource(w.API.Audit)
		work.Go("audit streams", n.RunAuditStreams)
	}
	if err := n.Start(work.ctx); err != nil {
		log.Error("notifications: cannot start; the worker retries", "error", err)
	}
	if !n.Sending() {
		log.Warn("notifications are off: set PUBLIC_URL, the base of the links they carry, to send them by email, webhooks and Web Push (a server on loopback, or on this machine's SQLite default, takes its own local URL)")
		return n
	}
	in.Notify(n)
	ch.Notify(n)
	// On Postgres every replica's worker wakes for the events any replica
	// queues; both return at once on SQLite.
	work.Go("notification events heard", n.Listen)
	work.Go("notification settings heard", n.ListenReach)
	work.Go("notification events sent", n.Publish)
	work.Go("notification worker", n.Run)
	return n
}
