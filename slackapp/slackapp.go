// Package slackapp is ctalk's Slack door: an organization's Slack app, the
// links of its people to their Slack users, the DMs that bring them the
// questions and drafts waiting for them with buttons to decide there, and
// the two routes Slack calls (interactivity and events). It translates
// Slack's protocol only: every decision goes through usecase.Answers, as
// the web app's do, and every request Slack sends is verified by its
// signature, accepted once, and acted on only for the linked person to
// whom the question was sent. It owns the slack_* tables.
package slackapp

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/usecase"
)

// DefaultAPIURL is Slack's Web API.
const DefaultAPIURL = "https://slack.com/api/"

// Door is where a decision made in Slack was made (usecase.Decision.Door).
const Door = "slack"

// LinkTTL is how long the link of a confirmation DM works.
const LinkTTL = 15 * time.Minute

// Config configures the Service.
type Config struct {
	// PublicURL is the base of the links the DMs carry and of the URLs of
	// the manifest; without it nothing is sent.
	PublicURL string
	// APIURL is Slack's Web API, DefaultAPIURL when empty (tests point it
	// at a stand-in).
	APIURL string
	// HTTP makes the requests to Slack: the SSRF-guarded client of
	// internal/outbound.
	HTTP *http.Client
	// MaxRetryAfter bounds how long a call waits when Slack says it is
	// rate limited before it gives up (the outbox then retries later);
	// zero means 30 s.
	MaxRetryAfter time.Duration
	// SettleGrace is how long a DM that Send finds decided just after
	// sending it waits for the decision's own update, which says where
	// the decision was made, before Send settles it without saying;
	// zero means 5 s.
	SettleGrace time.Duration
	Logger      *slog.Logger
}

// Services are what the Slack door calls.
type Services struct {
	Inbox   *inbox.Service
	Answers *usecase.Answers
	Orgs    *orgs.Service
	// Notify hears of links made and ended; nil without notifications.
	Notify *notify.Service
	// Audit records the decisions made in Slack; nil records none.
	Audit *audit.Log
}

// Service is the Slack door of one ctalk server.
type Service struct {
	db  *db.DB
	cfg Config
	svc Services
	log *slog.Logger
	// updates are the messages being updated in the background.
	updates sync.WaitGroup
	stop    context.Context
	cancel  context.CancelFunc
}

// New returns the Slack door over d. It hears of every decision through
// s.Answers, to update the DMs of the question decided.
func New(d *db.DB, cfg Config, s Services) *Service {
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	if !strings.HasSuffix(cfg.APIURL, "/") {
		cfg.APIURL += "/"
	}
	if cfg.MaxRetryAfter == 0 {
		cfg.MaxRetryAfter = 30 * time.Second
	}
	if cfg.SettleGrace == 0 {
		cfg.SettleGrace = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 5 * time.Second}
	}
	ctx, cancel := context.WithCancel(context.Background())
	sv := &Service{db: d, cfg: cfg, svc: s, log: cfg.Logger, stop: ctx, cancel: cancel}
	if s.Answers != nil {
		s.Answers.OnDecided(sv.decided)
	}
	if s.Orgs != nil {
		s.Orgs.OnChange(sv.memberChanged)
	}
	if s.Inbox != nil {
		s.Inbox.OnLeft(sv.left)
	}
	return sv
}

// memberChanged forgets, in the background, the Slack link of a member
// removed from their org.
func (s *Service) memberChanged(orgID, userID string) {
	if userID == "" {
		return
	}
	s.background(orgID, 10*time.Second, func(ctx context.Context) {
		_, _, err := s.svc.Orgs.Member(ctx, orgID, userID)
		if ctalk.ErrorCode(err) != ctalk.ENotFound {
			return
		}
		if err := s.Unlink(ctx, ctalk.Caller{OrgID: orgID, UserID: userID}); err != nil {
			s.log.Warn("slack: a removed member's link is kept", "org", orgID, "user", userID, "error", err)
		}
	})
}

// background runs fn apart from the request that asked for it, within
// timeout, and until Close, in orgID's scope (see ctalk.WithOrg).
func (s *Service) background(orgID string, timeout time.Duration, fn func(ctx context.Context)) {
	s.updates.Add(1)
	go func() {
		defer s.updates.Done()
		ctx, cancel := context.WithTimeout(ctalk.WithOrg(s.stop, orgID), timeout)
		defer cancel()
		fn(ctx)
	}()
}

// Close ends the updates of DMs under way and waits for them.
func (s *Service) Close() {
	s.cancel()
	s.updates.Wait()
}
