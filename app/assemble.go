// Package app is ctalk's composition root: Assemble builds every service,
// the OAuth server, the MCP tools and the web app over one database, and
// hands them to api, which only serves them over HTTP. The ctalk command,
// the load harness and the tests' starter all assemble through it.
package app

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/access"
	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/outbound"
	"github.com/ctalk/ctalk/knowledge"
	"github.com/ctalk/ctalk/mail"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/oauth"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/scim"
	"github.com/ctalk/ctalk/slackapp"
	"github.com/ctalk/ctalk/sso"
	"github.com/ctalk/ctalk/tools"
	"github.com/ctalk/ctalk/usecase"
	"github.com/ctalk/ctalk/wait"
	"github.com/ctalk/ctalk/web"
)

// Wiring configures Assemble.
type Wiring struct {
	API   api.Config
	Auth  auth.Config
	Inbox inbox.Config
	// AuditRetention is how long the audit events of an org that chose no
	// retention of its own are kept (whole days); zero keeps every event
	// and runs no pruner.
	AuditRetention time.Duration
	// Mail is the SMTP setup; its zero value sends no email.
	Mail mail.Config
	// Sender, when set, sends the server's email instead of Mail's SMTP
	// server (the screenshots keep the demo's mails with it).
	Sender mail.Sender
	// Notify configures notifications; its zero value takes
	// notify.DefaultConfig. PublicURL, Mail and Logger come from the rest.
	Notify notify.Config
	// LocalURL, used only when API.PublicURL is empty, is the base of the
	// links in mails and notifications of a server on one machine, such as
	// http://localhost:8080 (see the binary's localURL). Requests never
	// take it for their own URL: people on other machines still reach the
	// server by its own name.
	LocalURL string
	// LocalSignIn, set by "ctalk serve --local" alone, signs a browser in
	// as the member a link's token names (see web.Config.LocalSignIn).
	LocalSignIn func(token string) (orgID, userID string, ok bool)
	// Slack configures the Slack door; PublicURL and Logger come from the
	// rest, and HTTP, when nil, is outbound's guarded client.
	Slack slackapp.Config
	// SSO configures the organizations' single sign-on; HTTP, when nil,
	// is outbound's guarded client.
	SSO sso.Config
}

// linkURL is the base of the links the server mails and notifies.
func (w Wiring) linkURL() string {
	if w.API.PublicURL != "" {
		return w.API.PublicURL
	}
	return w.LocalURL
}

// Assembly is a ctalk server and the parts behind it.
type Assembly struct {
	*api.Server
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
	// Knowledge holds the answers people shared with their org.
	Knowledge *knowledge.Service
	// Slack is the Slack door: the org's app, links, DMs and the routes
	// Slack calls.
	Slack *slackapp.Service
	// SSO is the organizations' single sign-on.
	SSO *sso.Service
	// Answers is the use case of deciding and sending answers that every
	// door calls.
	Answers *usecase.Answers
	// SCIM is the identity providers' door: /scim/v2 and the orgs' SCIM
	// tokens.
	SCIM *scim.Service
	// work is the background work, stopped and waited for by Close.
	work *workers
}

// Assemble wires a ctalk server over d, as every ctalk process does (the
// ctalk command, the load harness, the tests): it is the one place where
// the parts are built and joined. The auth, org, inbox and channels
// services; the wake-up broker with, on Postgres, its listener for other
// replicas' wake-ups and its publisher of this one's; the listeners of the
// token and member caches for other replicas' changes; presence; the audit
// log with its pruner; the OAuth authorization server; the MCP tools; the
// web app; and the HTTP application that serves them. w.API.Audit is
// replaced by the assembled log. The background work runs until Close; d
// stays the caller's to close.
func Assemble(d *db.DB, w Wiring) (*Assembly, error) {
	a, err := auth.NewService(d, w.Auth)
	if err != nil {
		return nil, err
	}
	if w.API.Logger == nil {
		w.API.Logger = slog.Default()
	}
	log := w.API.Logger
	work := newWorkers(log)
	broker := wait.NewBroker()
	// Every revocation, of this replica or another, ends what the revoked
	// credentials hold open.
	a.OnRevoked(broker.Revoked)
	if d.Notifies() {
		work.Go("wake-ups heard", func(ctx context.Context) { broker.Listen(ctx, d, log) })
		work.Go("wake-ups sent", func(ctx context.Context) { broker.Publish(ctx, d, log) })
		work.Go("revocations heard", func(ctx context.Context) { a.Listen(ctx, log) })
	}
	w.API.Audit = audit.NewLog(d, log)
	if w.AuditRetention > 0 {
		w.API.Audit.SetDefaultRetention(int(w.AuditRetention / (24 * time.Hour)))
		work.Go("audit pruning", func(ctx context.Context) { w.API.Audit.PruneEvery(ctx, 24*time.Hour) })
	}
	in := inbox.NewService(d, w.Inbox, broker)
	o := orgs.NewService(d, a)
	// The inbox's cached pages show senders as orgs stores them.
	o.OnChange(in.MembersChanged)
	if d.Notifies() {
		work.Go("member changes heard", func(ctx context.Context) { o.Listen(ctx, log) })
	}
	work.Go("organization deletions", func(ctx context.Context) { o.DeleteDueEvery(ctx, orgs.DeletionCheck, log) })
	// Channel waits wake through the same broker, keyed by channel.
	ch := channels.NewService(d, channels.Config{Recheck: w.Inbox.Recheck, NoAlertsTTL: channels.DefaultNoAlertsTTL}, broker)
	presence := orgs.NewPresence(d, log)
	work.Go("presence", presence.Run)
	work.Go("channel alerts pruning", func(ctx context.Context) { ch.PruneAlertsEvery(ctx, time.Hour, log) })

	sender := newSender(&w, log)
	acc := access.New(access.Config{Mail: w.Mail, PublicURL: w.linkURL(), Logger: log}, a, o, sender)

	n := startNotify(work, d, w, log, sender, o, in, ch)

	svc := tools.Services{Auth: a, Orgs: o, Inbox: in, Channels: ch, Presence: presence, Access: acc, Notify: n, Knowledge: newKnowledge(d, o, in), OAuth: oauth.NewService(d, a, oauthConfig(w.API))}
	svc.Answers = usecase.NewAnswers(in, svc.Knowledge, log)
	svc.Departures = usecase.NewDepartures(o, in)
	sl := newSlack(d, w, log, svc, n)
	ss := newSSO(d, w, a, o)
	work.Go("SSO domain re-check", func(ctx context.Context) { ss.RecheckDomainsEvery(ctx, auditLapsed(w.API.Audit), log) })
	p := api.Parts{DB: d, Services: svc, Metrics: prometheus.NewRegistry(), Stop: make(chan struct{})}
	p.SCIM = scim.New(d, scim.Services{Orgs: o, Channels: ch, Departures: svc.Departures, Audit: w.API.Audit}, log)
	p.Tools = tools.New(tools.Config{Version: w.API.Version, Logger: log, AllowOrgSignup: w.API.AllowOrgSignup, SignupSecret: w.API.SignupSecret,
		ProgressEvery: w.API.ProgressEvery, Audit: w.API.Audit, Stop: p.Stop, Metrics: p.Metrics, Icon: web.Icon()}, svc)
	p.Web = newWeb(w.API, log, p, w.LocalSignIn, sl, ss)
	p.Metrics.MustRegister(n.Collectors()...)
	return &Assembly{
		Notify: n,
		Server: api.New(w.API, p),
		Auth:   a, Orgs: o, Inbox: in, Channels: ch, Broker: broker, Audit: w.API.Audit,
		Mail: sender, Access: acc, Knowledge: svc.Knowledge, Slack: sl, SSO: ss, Answers: svc.Answers, SCIM: p.SCIM, work: work,
	}, nil
}

// newKnowledge builds the shared answers' service over d, whose look-up
// before an ask leaves a retry of a question asked with the same
// idempotency key to the inbox.
func newKnowledge(d *db.DB, o *orgs.Service, in *inbox.Service) *knowledge.Service {
	kn := knowledge.NewService(d, o)
	kn.SkipRetries(func(ctx context.Context, c ctalk.Caller, key string) (bool, error) {
		q, err := in.AskedWithKey(ctx, c, key)
		return q != nil, err
	})
	return kn
}

// newSlack builds the Slack door, which sends the notifications' Slack
// channel once they are sent at all.
func newSlack(d *db.DB, w Wiring, log *slog.Logger, svc tools.Services, n *notify.Service) *slackapp.Service {
	cfg := w.Slack
	cfg.PublicURL, cfg.Logger = w.linkURL(), log
	if cfg.HTTP == nil {
		cfg.HTTP = outbound.Client(outbound.Options{})
	}
	sl := slackapp.New(d, cfg, slackapp.Services{Inbox: svc.Inbox, Answers: svc.Answers, Orgs: svc.Orgs, Notify: n, Audit: w.API.Audit})
	if n.Sending() {
		n.SetSlack(sl)
	}
	return sl
}

// newSSO builds the organizations' single sign-on, which every password
// and passkey sign-in asks first.
func newSSO(d *db.DB, w Wiring, a *auth.Service, o *orgs.Service) *sso.Service {
	cfg := w.SSO
	if cfg.HTTP == nil {
		cfg.HTTP = outbound.Client(outbound.Options{})
	}
	ss := sso.New(d, cfg, o)
	a.SetSignInGate(ss.Gate)
	return ss
}

// auditLapsed writes each verified domain sent back to pending, its TXT
// record gone, to its org's audit log, as done by the server itself.
func auditLapsed(l *audit.Log) func(sso.Lapsed) {
	return func(d sso.Lapsed) {
		l.Record(audit.Event{At: time.Now().UTC(), OrgID: d.OrgID, Tool: "sso:domain_lapsed", Outcome: "ok", IDs: []string{d.DomainID}})
	}
}

// newWeb builds the web app over the parts, the tools' sign-up check
// included, the Slack door's pages and routes, and single sign-on's.
func newWeb(cfg api.Config, log *slog.Logger, p api.Parts, localSignIn func(string) (string, string, bool), sl *slackapp.Service, ss *sso.Service) *web.Pages {
	pages := web.New(web.Config{
		Logger:            log,
		PublicURL:         func(r *http.Request) string { return api.PublicURL(cfg.PublicURL, r) },
		CheckSignup:       p.Tools.CheckSignup,
		SignupNeedsSecret: !cfg.AllowOrgSignup,
		SecureCookies:     strings.HasPrefix(cfg.PublicURL, "https://"),
		Version:           cfg.Version,
		Build:             cfg.Build,
		Stop:              p.Stop,
		LocalSignIn:       localSignIn,
	}, web.Services{Auth: p.Auth, Orgs: p.Orgs, OAuth: p.OAuth, Inbox: p.Inbox, Channels: p.Channels, Audit: cfg.Audit, Access: p.Access, Knowledge: p.Knowledge, Answers: p.Answers, Departures: p.Departures, Slack: sl, SSO: ss, SCIM: p.SCIM})
	pages.SetNotify(p.Notify)
	return pages
}

// newSender is the server's mail sender for w.Mail. The binary validated
// the configuration at start; a test that did not gets a server that says
// it sends no email, and w.Mail is cleared to match.
func newSender(w *Wiring, log *slog.Logger) mail.Sender {
	if w.Sender != nil {
		return w.Sender
	}
	if w.Mail.Logs() {
		log.Warn("mail goes to this log (SMTP_URL=log:), links of invites and password resets included: for development only")
		return mail.NewLogSender(log)
	}
	sender, err := mail.New(w.Mail)
	if err != nil {
		log.Error("mail disabled: invalid configuration", "error", err)
		w.Mail = mail.Config{}
		sender, _ = mail.New(w.Mail)
	}
	return sender
}

// oauthConfig is the authorization server's configuration: cfg.OAuth, or
// else oauth.DefaultConfig.
func oauthConfig(cfg api.Config) oauth.Config {
	if cfg.OAuth != nil {
		return *cfg.OAuth
	}
	return oauth.DefaultConfig()
}

// Close drains the server (ending every wait), stops its background work
// and waits for it, and for the mails sent after answers, to return (until
// ctx ends, at most 10 s), and writes the
// audit events still queued; calls still finishing afterwards are recorded
// directly. Call it before shutting down the HTTP server in front, whose
// shutdown would otherwise wait for the waits to end, and before closing
// the database.
func (a *Assembly) Close(ctx context.Context) {
	a.Server.Close(ctx)
	a.Channels.Close()
	a.Slack.Close()
	a.work.Stop(ctx, a.Access.Wait)
	a.Audit.Close()
}
