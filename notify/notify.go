// Package notify tells people outside the app that something waits for
// them: it queues events in the transaction of the change that causes them,
// expands each, once, into deliveries by the person's settings (email,
// webhooks, Web Push), and delivers them at least once, retrying temporary failures
// with backoff, across replicas and restarts.
package notify

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Kind is what an event tells its person.
type Kind string

// The kinds of event.
const (
	// KindQuestion: a question waits for the person (ask_person).
	KindQuestion Kind = "question"
	// KindDraft: the person's agent proposed an answer that waits for
	// their approval (human approval mode).
	KindDraft Kind = "draft"
	// KindPost: the person's agent's channel post waits for their approval.
	KindPost Kind = "post"
	// KindAnswered and KindDeclined: the person's question was resolved.
	KindAnswered Kind = "answered"
	KindDeclined Kind = "declined"
	// KindMention: the person was @mentioned in a channel; KindUrgent: an
	// urgent post reached a channel of theirs.
	KindMention Kind = "mention"
	KindUrgent  Kind = "urgent"
	// KindReminder: a question to the person has waited longer than the
	// org's reminder time; KindStillWaiting: the asker's note, one reminder
	// time later, that it still waits.
	KindReminder     Kind = "reminder"
	KindStillWaiting Kind = "still_waiting"
	// KindWithdrawn closes a question without telling anyone: like an
	// answer or a decline, it ends the question's reminders.
	KindWithdrawn Kind = "withdrawn"
	// KindForwarded: the person's question was forwarded to someone else;
	// KindInfoRequested: the one asked wants more information from the
	// person first; KindInfoProvided: the asker gave the person the
	// information they asked for.
	KindForwarded     Kind = "forwarded"
	KindInfoRequested Kind = "info_requested"
	KindInfoProvided  Kind = "info_provided"
	// KindWebhookDisabled tells a webhook's owner that it was disabled.
	KindWebhookDisabled Kind = "webhook_disabled"
	// KindSecurity tells a person of a change to what proves who they are
	// (a passkey added, approved or removed; their address changed), by
	// their webhooks and browsers whatever their settings, as a sign-in
	// from a new browser is told: the mail that tells them too may be
	// read by an agent that holds their mailbox.
	KindSecurity Kind = "security"
)

// Kinds are the kinds a person can choose channels for, in the order the
// settings show them.
var Kinds = []Kind{KindQuestion, KindDraft, KindPost, KindAnswered, KindDeclined, KindMention, KindUrgent, KindReminder, KindStillWaiting, KindForwarded, KindInfoRequested, KindInfoProvided}

// closing kinds end a question's reminders.
func (k Kind) closing() bool { return k == KindAnswered || k == KindDeclined || k == KindWithdrawn }

// endsReminders tells whether an event of kind k ends the reminders of its
// subject (see closedSubjectSQL): a closing one, or the recipient's
// forward, which ends theirs. It is queued while a reminder is pending,
// even when it reaches nobody, so that the reminder finds it.
func (k Kind) endsReminders() bool { return k.closing() || k == KindForwarded }

// Event is something to tell one person. The domain services fill it in
// when they queue it, with what its notification needs, so that notify
// never reads their tables.
type Event struct {
	Kind   Kind
	OrgID  string
	UserID string // the person told
	// Subject is what the event is about (a question's message id, a held
	// post's id): one question's notifications thread together, and its
	// answer ends its reminders.
	Subject string
	// Actor is the user whose act caused it (the asker, the answerer).
	Actor string
	// Text is the words involved (the question, the answer), cut at
	// delivery by the org's text setting.
	Text string
	// Link is the path of the app's page that shows it, such as
	// "/inbox/q_...": a signed-in page, never with a token.
	Link   string
	Urgent bool
	// Due delays the event (a reminder); zero means now.
	Due time.Time
}

// Queuer queues events inside the caller's transaction: a rollback queues
// nothing, a commit queues them all. The domain services take this, not
// the Service, so that they depend on nothing else of this package.
type Queuer interface {
	Queue(ctx context.Context, tx db.Querier, events ...Event) error
	// Wake wakes the workers for a question stored with its notify mark,
	// once its transaction committed (see Service.Wake).
	Wake()
}

// Directory tells notify who a person is: their display name and email
// address (empty when they have none). ENotFound for a removed member.
type Directory func(ctx context.Context, orgID, userID string) (name, email string, err error)

// Config configures the Service.
type Config struct {
	// PublicURL is the base of every link, such as https://ctalk.example.com.
	PublicURL string
	// Mail sends the email channel; nil means no email.
	Mail Mailer
	// HTTP posts to webhooks; nil means outbound.Client without loopback.
	HTTP HTTPDoer
	// AllowHTTP lets webhooks use http:// URLs and reach loopback (tests
	// and development only).
	AllowHTTP bool
	// Poll is how often an idle worker looks for due work.
	Poll time.Duration
	// Gather is how long a worker lets new work gather, once woken or
	// after a round that took less than a whole batch, before its next
	// round: a burst is then expanded in a few transactions of many events
	// rather than many of one or two, each with its commit (see Run).
	// Negative means none.
	Gather time.Duration
	// ReachTTL is how long a replica trusts what it read of where
	// notifications can go; ReachCacheTTL when zero.
	ReachTTL time.Duration
	// Lease is how long a claimed event or delivery stays a worker's
	// before another may take it: longer than a send may take (the mail
	// package's 10 s, a webhook's 5 s), so that only a dead worker's lease
	// runs out; it is how long a killed replica's claims wait.
	Lease time.Duration
	// Batch is how many deliveries a worker claims at once; no more than
	// Workers, so that each claimed delivery is sent at once, within its
	// lease.
	Batch int
	// Workers is how many deliveries a replica sends at once: goroutines
	// that mostly wait for the receiver, so that a burst costs a claim's
	// statements per Workers deliveries.
	Workers int
	// MaxAttempts ends the retries of a delivery.
	MaxAttempts int
	// RetryBase is the first retry's delay; each next one doubles, up to
	// RetryMax, with jitter.
	RetryBase, RetryMax time.Duration
	// WebhookGiveUp disables a webhook that has failed for this long.
	WebhookGiveUp time.Duration
	// DigestWindow is the least time between two mails to one person:
	// what comes meanwhile waits, and goes out as one digest when it
	// ends. Zero sends every notification as its own mail.
	DigestWindow time.Duration
	// PushContact is the VAPID subject push services may reach the
	// operator by (a mailto: or https: URL); empty means PublicURL.
	PushContact string
	Logger      *slog.Logger
}

// DefaultGather is Config.Gather's default: a tenth of the time a
// notification may take to reach its receiver (BENCHMARKS.md) at most.
const DefaultGather = 50 * time.Millisecond

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{
		Poll:          500 * time.Millisecond,
		Gather:        DefaultGather,
		Lease:         30 * time.Second,
		Batch:         32,
		Workers:       32,
		MaxAttempts:   20,
		RetryBase:     5 * time.Second,
		RetryMax:      time.Hour,
		WebhookGiveUp: 24 * time.Hour,
		DigestWindow:  DefaultDigestWindow,
	}
}

// DefaultDigestWindow is the digest window of DefaultConfig.
const DefaultDigestWindow = 2 * time.Minute

// Service queues and delivers notifications.
type Service struct {
	db      *db.DB
	cfg     Config
	dir     Directory
	log     *slog.Logger
	http    HTTPDoer
	metrics *Metrics
	kick    chan struct{}
	// unsubKey signs the one-click unsubscribe links; loaded by Start.
	unsubKey []byte
	// awayUntil, when set (see SkipAway), says until when a person is away.
	awayUntil AwayUntil
	// vapid is the server's Web Push key pair; loaded by Start.
	vapid atomic.Pointer[vapidKeys]
	// slack sends the Slack channel's DMs; nil until SetSlack.
	slack atomic.Pointer[SlackSender]
	// remote asks Publish to tell the other replicas' workers; publishing
	// is set while Publish runs.
	remote     chan struct{}
	publishing atomic.Bool
	// listening is set once Listen is connected (tests wait for it).
	listening atomic.Bool
	// reach caches where people's notifications can go, inputs what
	// expanding their events reads (reachcache.go).
	reach  *reachCache
	inputs *inputsCache
	// deleting, when set (see SkipDeleting), says whether an org's
	// deletion is scheduled.
	deleting DeletionScheduled
	// auditSrc is the audit log the audit streams read; nil until
	// SetAuditSource.
	auditSrc AuditSource
}

// AwayUntil tells notify until when a person said they are away: the zero
// time when they are not.
type AwayUntil func(ctx context.Context, orgID, userID string) (time.Time, error)

// SkipAway makes the service send nothing to a person while away says
// they are away: their events are expanded into no deliveries, and are not
// held for their return. The app keeps every question anyway, and a held
// pile would greet them with questions answered, forwarded or withdrawn
// meanwhile. Reminders still fall due, and still tell the asker that their
// question waits. Call it before serving.
func (s *Service) SkipAway(away AwayUntil) { s.awayUntil = away }

// DeletionScheduled tells notify whether an org's deletion is scheduled.
type DeletionScheduled func(ctx context.Context, orgID string) (bool, error)

// SkipDeleting makes the service send nothing to the members of an org
// whose deletion deleting says is scheduled, but the notices of their
// security and of a disabled webhook: events are expanded as if every
// member had paused notifications, and deliveries still pending (a
// reminder, mails held for a digest) are dropped when claimed. The
// members are mailed the deletion's own notice (package access). Call it
// before serving.
func (s *Service) SkipDeleting(deleting DeletionScheduled) { s.deleting = deleting }

// orgDeleting reports whether orgID's deletion is scheduled.
func (s *Service) orgDeleting(ctx context.Context, orgID string) (bool, error) {
	if s.deleting == nil {
		return false, nil
	}
	yes, err := s.deleting(ctx, orgID)
	if err != nil {
		return false, fmt.Errorf("look up whether %s is to be deleted: %w", orgID, err)
	}
	return yes, nil
}

// pauseAway pauses settings, a person's, while they are away: a pause sends
// nothing but the notice of a disabled webhook (see Settings.channelsFor).
func (s *Service) pauseAway(ctx context.Context, orgID, userID string, settings *Settings) error {
	if s.awayUntil == nil {
		return nil
	}
	until, err := s.awayUntil(ctx, orgID, userID)
	if err != nil {
		return fmt.Errorf("look up whether %s is away: %w", userID, err)
	}
	if until.After(s.db.Now()) {
		settings.Paused = true
	}
	return nil
}

// NewService returns a Service over d that learns who people are from dir.
func NewService(d *db.DB, cfg Config, dir Directory) *Service {
	def := DefaultConfig()
	if cfg.Poll <= 0 {
		cfg.Poll = def.Poll
	}
	if cfg.Lease <= 0 {
		cfg.Lease = def.Lease
	}
	if cfg.Batch <= 0 {
		cfg.Batch = def.Batch
	}
	if cfg.Workers <= 0 {
		cfg.Workers = def.Workers
	}
	cfg.Batch = min(cfg.Batch, cfg.Workers)
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = def.MaxAttempts
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = def.RetryBase
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = def.RetryMax
	}
	if cfg.WebhookGiveUp <= 0 {
		cfg.WebhookGiveUp = def.WebhookGiveUp
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	s := &Service{db: d, cfg: cfg, dir: dir, log: log, metrics: newMetrics(), kick: make(chan struct{}, 1), remote: make(chan struct{}, 1), reach: newReachCache(d, cmp.Or(cfg.ReachTTL, ReachCacheTTL)), inputs: newInputsCache(d, cmp.Or(cfg.ReachTTL, ReachCacheTTL))}
	s.reach.Heard(s.forgetInputs)
	s.http = cfg.HTTP
	if s.http == nil {
		s.http = defaultHTTP(cfg.AllowHTTP)
	}
	return s
}

// EmailEnabled reports whether the email channel is configured.
func (s *Service) EmailEnabled() bool { return s.cfg.Mail != nil }

// Queue stores events in tx, due at their Due time or now; an event that
// can reach nobody (see reach.go) is left out. Once tx commits, events due
// now wake the worker of this replica and, on Postgres, those of the others
// (see Publish): one notification for the transaction, however many events
// it queued.
//
// Returns only the database's errors.
func (s *Service) Queue(ctx context.Context, tx db.Querier, events ...Event) error {
	events, err := s.queueable(ctx, tx, events)
	if err != nil || len(events) == 0 {
		return err
	}
	return s.insertEvents(ctx, tx, events)
}

// insertEvents stores events that reach someone in tx, and wakes the
// workers once tx commits.
func (s *Service) insertEvents(ctx context.Context, tx db.Querier, events []Event) error {
	if err := s.insertRows(ctx, tx, insertEventsSQL, eventWidth, s.eventRows(tx, events)); err != nil {
		return fmt.Errorf("queue notification: %w", err)
	}
	return nil
}

// eventWidth is how many arguments a row of insertEventsSQL takes.
const eventWidth = 11

// eventRows are the arguments of insertEventsSQL for events, queued in tx:
// once tx commits, the events due now wake the workers.
func (s *Service) eventRows(tx db.Querier, events []Event) []any {
	now := s.db.Now()
	dueNow := false
	rows := make([]any, 0, eventWidth*len(events))
	for _, e := range events {
		dueNow = dueNow || e.Due.IsZero() || e.Due.Before(now)
		rows = append(rows, s.eventRow(e, now)...)
	}
	if dueNow {
		// Once tx commits, every replica's worker looks: the events go out
		// within milliseconds of the commit rather than at the next poll.
		db.AfterCommit(tx, "notify.queued", s.queued)
	}
	return rows
}

// eventRow is the arguments of a row of insertEventsSQL for e, queued at
// now: due at its Due time, or now.
func (s *Service) eventRow(e Event, now time.Time) []any {
	due := e.Due
	if due.IsZero() || due.Before(now) {
		due = now
	}
	return []any{eventID(), e.OrgID, e.UserID, string(e.Kind), e.Subject, e.Actor, e.Text, e.Link, e.Urgent, now, due.UTC()}
}

// Wake wakes this replica's worker for the questions' outbox: a question
// stored with its notify mark is its own notification's record, which the
// worker reads after the ones it read before (see takeOutbox). The asker
// calls it once the question's transaction committed; a worker that sleeps
// through it finds the question at its next poll. The other replicas are
// not told (see Publish): one worker reads the outbox for all, and this
// one is awake. Telling them cost each ask a notification through the
// database, which they answered by reading the outbox this one reads.
func (s *Service) Wake() { s.wake() }

// queued wakes this replica's worker and, while Publish runs, every other
// replica's (see Listen). It never blocks.
func (s *Service) queued() {
	s.wake()
	if s.publishing.Load() {
		select {
		case s.remote <- struct{}{}:
		default: // a notification is due to go out anyway
		}
	}
}

func (s *Service) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// eventID is a new event's id, in time order (see ctalk.SortedID):
// BenchmarkExpand measured a claim's expansion at 81 µs an event with
// random ids, 61 µs with these.
func eventID() string { return ctalk.SortedID("ev_") }

// notFound is the one answer for anything of another person or org.
func notFound(what string) error {
	return ctalk.Errorf(ctalk.ENotFound, "%s not found", what)
}

// Sending reports whether the service sends notifications: it needs
// PublicURL, the base of their links. Without it, settings and webhooks
// can be kept, and nothing is queued.
func (s *Service) Sending() bool { return s.cfg.PublicURL != "" }

// TellSecurity queues, in a transaction of its own, the security notice
// text (ctalk's words, one line) for the member userID of orgID, to go by
// their webhooks and browsers whatever their settings (see KindSecurity).
// A notice that reaches nothing is not queued.
//
// Returns only the database's errors.
func (s *Service) TellSecurity(ctx context.Context, orgID, userID, text string) error {
	return s.db.Tx(ctx, func(tx db.Querier) error {
		return s.Queue(ctx, tx, Event{Kind: KindSecurity, OrgID: orgID, UserID: userID, Text: text, Link: "/profile"})
	})
}
