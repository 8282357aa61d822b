package inbox

import (
	"strings"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/readcache"
	"github.com/ctalk/ctalk/wait"
)

// DefaultPageCacheTTL is how long a replica serves a page of check_inbox as
// it read it before it reads it again (Config.PageCacheTTL). Only a page
// whose questions were all handed over already is kept, so that serving it
// again hands nothing over. Every change of what a page shows forgets the
// org's pages: a question asked, answered, declined or withdrawn, a draft
// proposed, approved, rejected or edited (all of which also change pair
// statistics and recent exchanges), and a change or removal of a member
// (orgs announces it through MembersChanged). It takes effect at once on
// the replica that made it, and on the others when the wake-up that
// announces it arrives, within milliseconds; their brokers forget the org's
// pages before they wake anyone (a channel's wake-ups, which change nothing
// a page shows, forget nothing). A lost wake-up lets another replica show
// the old page for at most DefaultPageCacheTTL more, and a broker whose
// listener reconnects forgets every page.
const DefaultPageCacheTTL = time.Second

// maxCachedPages bounds the page cache; beyond it, pages are not kept.
const maxCachedPages = 10000

// pageKey names a page: whose, how long, and after which position (in
// seconds and nanoseconds, exact for every year a cursor may carry, where
// UnixNano would overflow).
type pageKey struct {
	orgID, userID string
	limit         int
	afterSec      int64
	afterNsec     int
	afterID       string
}

// cachedPage is a page as Inbox returned it. Its items are shared by every
// call served from it, so nothing changes them once kept.
type cachedPage struct {
	orgID, userID string
	items         []*InboxItem
	next          string
}

type pageCache = readcache.Cache[pageKey, cachedPage]

// newPageCache returns an empty page cache whose pages live ttl, or nil when
// ttl is not positive. Its changes reach other replicas as wake-ups of the
// broker, not on a channel of its own.
func newPageCache(d *db.DB, ttl time.Duration) *pageCache {
	if ttl <= 0 {
		return nil
	}
	return readcache.New[pageKey](d, wait.NotifyChannel, ttl, maxCachedPages, func(p cachedPage) readcache.Scope {
		return readcache.Scope{OrgID: p.orgID, UserID: p.userID}
	})
}

// changed makes a committed change of orgID's questions, drafts or pair
// statistics take effect: it wakes the waiters of users, here and on every
// other replica, whose brokers each forget the org's pages first (see
// forgetCachedPages), so that an agent woken by the change and calling
// check_inbox reads the page anew.
func (s *Service) changed(orgID string, users ...string) {
	for _, u := range users {
		s.broker.Wake(orgID, u)
	}
}

// forgetCachedPages is how the service hears a wake-up of its broker (see
// Broker.Heard): it forgets the pages of the wake-up's org, or every page
// after a reconnect. The keys of channels (a channel's waiters, "#name",
// and an MCP session's subscriptions, "~id") change nothing a page shows.
func (s *Service) forgetCachedPages(orgID, key string) {
	switch {
	case orgID == "":
		s.pageCache.ForgetAll()
	case strings.HasPrefix(key, "#"), strings.HasPrefix(key, "~"):
	default:
		s.pageCache.Forget(readcache.Scope{OrgID: orgID})
	}
}

// MembersChanged makes a committed change of a member of orgID (userID, or
// the whole org when empty) take effect on the pages of check_inbox, which
// show their senders' names, ownership, notes and removal: at once on this
// replica and, through the broker, on every other. orgs calls it after
// every such change (see orgs.Service.OnChange).
func (s *Service) MembersChanged(orgID, userID string) {
	// No waiter waits under an empty user: the wake-up only carries the
	// forget to the other replicas.
	s.changed(orgID, "")
}
