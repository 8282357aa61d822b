package channels

import (
	"context"
	"fmt"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/readcache"
)

// DefaultNoAlertsTTL is how long a replica trusts that a member has no
// alerts and no decisions on held posts to be handed over
// (Config.NoAlertsTTL), so that check_inbox and wait_for_inbox, which ask
// on every call, need no query while nothing is pending. Everything that
// files an alert or decides on a held post wakes the member it is for,
// after its transaction commits; that wake-up forgets the knowledge at once
// on the replica that made it and, through the broker's notification, on
// every other before it wakes anyone there. A lost notification delays an
// alert on another replica by at most this long, and a broker whose
// listener reconnects forgets everything.
const DefaultNoAlertsTTL = time.Second

// maxNoAlerts bounds how many members' "nothing pending" a replica keeps.
const maxNoAlerts = 100000

// noAlerts is a member known to have nothing pending.
type noAlerts struct{ orgID, userID string }

type noAlertsCache = readcache.Cache[noAlerts, noAlerts]

// newNoAlertsCache returns an empty cache whose knowledge lives ttl, or nil
// when ttl is not positive. Its changes reach other replicas as the
// broker's wake-ups, not on a channel of its own.
func newNoAlertsCache(d *db.DB, ttl time.Duration) *noAlertsCache {
	if ttl <= 0 {
		return nil
	}
	return readcache.New[noAlerts](d, "", ttl, maxNoAlerts, func(k noAlerts) readcache.Scope {
		return readcache.Scope{OrgID: k.orgID, UserID: k.userID}
	})
}

// heard forgets, on every wake-up of this replica or another, what it may
// have changed: the member's knowledge (a key of channels' own, "#name" or
// "~id", names no member), or everything when orgID is empty (see
// wait.Broker.Heard).
func (s *Service) heard(orgID, key string) {
	if orgID == "" {
		s.noAlerts.ForgetAll()
		return
	}
	s.noAlerts.Forget(readcache.Scope{OrgID: orgID, UserID: key})
}

// pendingAlerts counts c's alerts and decisions on held posts not yet
// handed over, answering zeros without a query while this replica knows
// there are none.
func (s *Service) pendingAlerts(ctx context.Context, c ctalk.Caller) (alerts, decided int, err error) {
	k := noAlerts{c.OrgID, c.UserID}
	var read readcache.Read
	if s.noAlerts != nil {
		now := s.db.Now()
		if _, ok := s.noAlerts.Get(k, now); ok {
			return 0, 0, nil
		}
		// Before the statement: a wake-up forgotten from here on keeps
		// what it reads out of the cache.
		read = s.noAlerts.Begin(now)
	}
	if err := s.db.QueryRow(ctx, hasAlertsSQL, c.OrgID, c.UserID).Scan(&alerts, &decided); err != nil {
		return 0, 0, fmt.Errorf("check channel alerts: %w", err)
	}
	if s.noAlerts != nil && alerts+decided == 0 {
		s.noAlerts.Put(k, k, read, time.Time{})
	}
	return alerts, decided, nil
}
