package api

import (
	"context"
	"time"

	"github.com/ctalk/ctalk/access"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/mail"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/wait"
)

// Wiring configures Assemble.
type Wiring struct {
	API   Config
	Auth  auth.Config
	Inbox inbox.Config
	// AuditRetention is how long audit events are kept; zero keeps them
	// and runs no pruner.
	AuditRetention time.Duration
	// Mail is the SMTP setup; its zero value sends no email.
	Mail mail.Config
	// Notify configures notifications; its zero value takes
	// notify.DefaultConfig. PublicURL, Mail and Logger come from the rest.
	Notify notify.Config
}

// Assembly is a ctalk server and the parts behind it.
type Assembly struct {
	*Server
	Auth  *auth.Service
	Orgs  *orgs.Service
	Inbox *inbox.Service
	// Channels is the channels service the tools, the REST mirror and the
	// web app share.
	Channels *channels.Service
	Broker   *wait.Broker
	Audit    *audit.Log
	// Mail sends the server's email; without Wiring.Mail its every Send
	// fails with mail.ErrDisabled.
	Mail mail.Sender
	// Access invites and resets passwords by email.
	Access *access.Service
	// Notify queues and delivers notifications; nil without PUBLIC_URL.
	Notify *notify.Service
	cancel context.CancelFunc
}

// Assemble wires a ctalk server over d, as every ctalk process does (the
// ctalk command, the load harness, the tests): the auth, org and inbox
// services, the wake-up broker with, on Postgres, its listener for other
// replicas' wake-ups and its publisher of this one's, the listeners of the
// token and member caches for other replicas' changes, and the audit log
// with its pruner. w.API.Audit is
// replaced by the assembled log. The background work runs until Close; d
// stays the caller's to close.
func Assemble(d *db.DB, w Wiring) (*Assembly, error) {
	a, err := auth.NewService(d, w.Auth)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	broker := wait.NewBroker()
	// Every revocation, of this replica or another, ends what the revoked
	// credentials hold open.
	a.OnRevoked(broker.Revoked)
	if d.Engine == db.Postgres {
		go broker.Listen(ctx, d, w.API.Logger)
		go broker.Publish(ctx, d, w.API.Logger)
		go a.Listen(ctx, w.API.Logger)
	}
	w.API.Audit = audit.NewLog(d, w.API.Logger)
	if w.AuditRetention > 0 {
		go w.API.Audit.PruneEvery(ctx, time.Hour, w.AuditRetention)
	}
	in := inbox.NewService(d, w.Inbox, broker)
	o := orgs.NewService(d, a)
	// The inbox's cached pages show senders as orgs stores them.
	o.OnChange(in.MembersChanged)
	if d.Engine == db.Postgres {
		go o.Listen(ctx, w.API.Logger)
	}
	// Channel waits wake through the inbox's broker, keyed by channel.
	ch := channels.NewService(d, channels.Config{Recheck: w.Inbox.Recheck, NoAlertsTTL: channels.DefaultNoAlertsTTL}, broker)
	if !w.API.Mail.Enabled() {
		w.API.Mail = w.Mail
	}
	srv := New(w.API, d, a, o, in, ch)
	srv.presence = orgs.NewPresence(d, srv.log)
	go srv.presence.Run(ctx)
	go srv.channels.PruneAlertsEvery(ctx, time.Hour, srv.log)
	n := srv.startNotify(ctx, d, w.Notify, o, in, ch)
	return &Assembly{
		Notify: n,
		Server: srv,
		Auth:   a, Orgs: o, Inbox: in, Channels: ch, Broker: broker, Audit: w.API.Audit,
		Mail: srv.mailer, Access: srv.access, cancel: cancel,
	}, nil
}

// Close drains the server (ending every wait), stops its background work and
// writes the audit events still queued; calls still finishing afterwards are
// recorded directly. Call it before shutting down the HTTP server in front,
// whose shutdown would otherwise wait for the waits to end.
func (a *Assembly) Close(ctx context.Context) {
	a.Server.Close(ctx)
	a.Server.channels.Close()
	a.cancel()
	a.Audit.Close()
}
