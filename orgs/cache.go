package orgs

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/readcache"
)

// MemberCacheTTL is how long a replica serves a member and their org as it
// read them (Member, whoami's answer) before it reads them again. A change
// (notes, profile notes, role, removal, the org's settings) takes effect at
// once on the replica that made it, and on the others when the Postgres
// notification that announces it arrives, within milliseconds; a lost
// notification lets another replica show the old member or org for at
// most MemberCacheTTL more.
const MemberCacheTTL = time.Second

// changeChannel is the Postgres channel on which replicas announce whose
// member data they changed: ids only, "org/user", or "org/" for the org.
const changeChannel = "ctalk_orgs_changed"

// maxCachedMembers bounds the cache; beyond it, reads are not cached.
const maxCachedMembers = 100000

// member is what Member returns, as the cache holds it.
type member struct {
	user User
	org  Org
}

type memberKey struct{ orgID, userID string }

type memberCache = readcache.Cache[memberKey, member]

func newMemberCache(d *db.DB, ttl time.Duration) *memberCache {
	return readcache.New[memberKey](d, changeChannel, ttl, maxCachedMembers, func(m member) readcache.Scope {
		return readcache.Scope{OrgID: m.user.OrgID, UserID: m.user.ID}
	})
}

// copies returns copies of the cached user and org that a caller may change.
func (m member) copies() (*User, *Org) {
	u, o := m.user, m.org
	u.Ownership = slices.Clone(u.Ownership)
	if u.Away != nil {
		away := *u.Away
		u.Away = &away
	}
	return &u, &o
}

// changed makes a committed change of a member (userID) or of the whole org
// (userID empty) take effect in every replica's member cache.
func (s *Service) changed(ctx context.Context, orgID, userID string) {
	s.members.Changed(ctx, readcache.Scope{OrgID: orgID, UserID: userID}, slog.Default())
	for _, fn := range s.onChange {
		fn(orgID, userID)
	}
}

// OnChange makes fn run after every committed change of a member (userID)
// or of a whole org (userID empty), on the replica that made it, so that
// another package that shows members from a cache of its own (inbox's
// pages show their senders) forgets them; fn carries the change to the
// other replicas itself. Call it before the service serves calls.
func (s *Service) OnChange(fn func(orgID, userID string)) {
	s.onChange = append(s.onChange, fn)
}

// Listen applies the changes announced by other replicas to this one's
// member cache until ctx ends. After each (re)connect it empties the cache,
// since announcements sent while it was away are lost. It returns at once
// on SQLite.
func (s *Service) Listen(ctx context.Context, log *slog.Logger) {
	s.members.Listen(ctx, log)
}
