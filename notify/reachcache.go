package notify

import (
	"context"
	"database/sql"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/readcache"
)

// ReachCacheTTL is how long a replica trusts what it read of where a
// person's notifications can go (their settings' channels and pause, their
// webhooks and browsers) and of their org's (its webhooks, its reminder
// time), so that the worker reads where a burst of events to a person goes
// once. Every change of those (settings, unsubscribing,
// webhooks added, deleted or disabled, browsers subscribed or gone, the
// org's settings) forgets it at once on its replica and, through a Postgres
// notification, on the others; a lost notification costs at most this.
// A person's address comes through the Directory, as before.
const ReachCacheTTL = time.Second

// reachChannel is the Postgres channel of those changes: "org/user", or
// "org/" for the org's.
const reachChannel = "ctalk_notify_reach_changed"

// maxCachedReach bounds the cache; beyond it, reads are not cached.
const maxCachedReach = 100000

// reachPart is what the cache holds of a person (user set), or of their
// org (user empty): the person's part of a row of reachSQL, or the org's.
type reachPart struct {
	scope    readcache.Scope
	person   personReach
	orgHooks int
	reminder sql.NullInt64
}

// personReach is a person's columns of reachSQL.
type personReach struct {
	channels   sql.NullString
	paused     sql.NullBool
	hooks, web int
	slack      int
}

type reachCache = readcache.Cache[readcache.Scope, reachPart]

func newReachCache(d *db.DB, ttl time.Duration) *reachCache {
	return readcache.New[readcache.Scope](d, reachChannel, ttl, maxCachedReach, func(p reachPart) readcache.Scope { return p.scope })
}

// reachChanged makes a committed change of where the notifications of
// userID (or, with userID empty, of anyone in orgID) can go take effect in
// every replica's caches: the reach cache, and the expansion's (see
// inputsCache), which hears of other replicas' changes through it.
func (s *Service) reachChanged(ctx context.Context, orgID, userID string) {
	sc := readcache.Scope{OrgID: orgID, UserID: userID}
	s.inputs.Forget(sc)
	s.reach.Changed(ctx, sc, s.log)
}

// inputsPart is what the expansion's cache holds of a person (user set):
// their settings, active webhooks and browsers; or of their org (user
// empty): its settings and active webhooks.
type inputsPart struct {
	scope       readcache.Scope
	settings    Settings
	hooks, push []string
	slack       bool
	org         OrgSettings
	orgHooks    []string
}

// inputsCache keeps what expanding an event reads of notify's tables for
// its person and org (see expansion), for ReachCacheTTL, so that a busy
// worker reads each person's once a second rather than once a claim: the
// reads were a third of its time per event with a claim a few
// milliseconds. It is forgotten as the reach cache is, by the same changes.
type inputsCache = readcache.Cache[readcache.Scope, inputsPart]

func newInputsCache(d *db.DB, ttl time.Duration) *inputsCache {
	// Its changes come through the reach cache's channel (see NewService),
	// so it has no listener of its own.
	return readcache.New[readcache.Scope](d, "", ttl, maxCachedReach, func(p inputsPart) readcache.Scope { return p.scope })
}

// forgetInputs applies a change the reach cache heard of, from another
// replica, to the expansion's cache: the zero scope, after a reconnect,
// forgets everything.
func (s *Service) forgetInputs(sc readcache.Scope) {
	if sc == (readcache.Scope{}) {
		s.inputs.ForgetAll()
		return
	}
	s.inputs.Forget(sc)
}

// personPart is what the expansion reads of a person's settings, webhooks
// and browsers, from the cache when it holds them.
func (s *Service) personPart(ctx context.Context, orgID, userID string) (inputsPart, error) {
	return s.inputsPart(readcache.Scope{OrgID: orgID, UserID: userID}, func(p *inputsPart) (err error) {
		if p.settings, err = settingsOf(ctx, s.db, orgID, userID); err != nil {
			return err
		}
		if p.hooks, err = activeWebhooks(ctx, s.db, orgID, userID); err != nil {
			return err
		}
		if p.push, err = pushIDs(ctx, s.db, orgID, userID); err != nil {
			return err
		}
		p.slack, err = slackLinked(ctx, s.db, orgID, userID)
		return err
	})
}

// orgPart is what the expansion reads of an org's settings and webhooks,
// from the cache when it holds them.
func (s *Service) orgPart(ctx context.Context, orgID string) (inputsPart, error) {
	return s.inputsPart(readcache.Scope{OrgID: orgID}, func(p *inputsPart) (err error) {
		if p.org, err = orgSettings(ctx, s.db, orgID); err != nil {
			return err
		}
		p.orgHooks, err = activeWebhooks(ctx, s.db, orgID, "")
		return err
	})
}

// inputsPart is the cache's part of sc, or what read reads of it, kept.
func (s *Service) inputsPart(sc readcache.Scope, read func(*inputsPart) error) (inputsPart, error) {
	now := s.db.Now()
	if p, ok := s.inputs.Get(sc, now); ok {
		return p, nil
	}
	r := s.inputs.Begin(now)
	p := inputsPart{scope: sc}
	if err := read(&p); err != nil {
		return p, err
	}
	s.inputs.Put(sc, p, r, time.Time{})
	return p, nil
}

// cachedScan is the row reachSQL would read for an event from actor to
// userID, from the cache, when it holds all of it, but for the subject's
// pending reminder: it reads as none, which is right for a new question
// and irrelevant to any event that does not end reminders.
func (s *Service) cachedScan(e Event) (reachScan, bool) {
	now := s.db.Now()
	person, ok1 := s.reach.Get(readcache.Scope{OrgID: e.OrgID, UserID: e.UserID}, now)
	other, ok2 := s.reach.Get(readcache.Scope{OrgID: e.OrgID, UserID: e.Actor}, now)
	org, ok3 := s.reach.Get(readcache.Scope{OrgID: e.OrgID}, now)
	if !ok1 || !ok2 || !ok3 || e.Actor == "" || e.UserID == "" {
		return reachScan{}, false
	}
	return reachScan{
		channels: person.person.channels, paused: person.person.paused, hooks: person.person.hooks, web: person.person.web, slack: person.person.slack,
		otherChannels: other.person.channels, otherPaused: other.person.paused, oHooks: other.person.hooks, oWeb: other.person.web, oSlack: other.person.slack,
		orgHooks: org.orgHooks, reminder: org.reminder,
	}, true
}

// keepScan caches what a read of reachSQL for e, begun at r, found.
func (s *Service) keepScan(e Event, sc *reachScan, r readcache.Read) {
	put := func(userID string, p personReach) {
		if userID != "" {
			sc := readcache.Scope{OrgID: e.OrgID, UserID: userID}
			s.reach.Put(sc, reachPart{scope: sc, person: p}, r, time.Time{})
		}
	}
	put(e.UserID, personReach{sc.channels, sc.paused, sc.hooks, sc.web, sc.slack})
	put(e.Actor, personReach{sc.otherChannels, sc.otherPaused, sc.oHooks, sc.oWeb, sc.oSlack})
	org := readcache.Scope{OrgID: e.OrgID}
	s.reach.Put(org, reachPart{scope: org, orgHooks: sc.orgHooks, reminder: sc.reminder}, r, time.Time{})
}

// deleteReach is deleteOne of something that decides where the
// notifications of userID (or of the org, when empty) in orgID can go.
func (s *Service) deleteReach(ctx context.Context, orgID, userID, what, query string, args ...any) error {
	if err := s.deleteOne(ctx, what, query, args...); err != nil {
		return err
	}
	s.reachChanged(ctx, orgID, userID)
	return nil
}

// ListenReach applies the changes of reach announced by other replicas
// until ctx ends; it returns at once on SQLite.
func (s *Service) ListenReach(ctx context.Context) { s.reach.Listen(ctx, s.log) }
