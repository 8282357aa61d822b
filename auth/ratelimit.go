package auth

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/ctalk/ctalk"
)

// ipLimiter bounds costly calls per client address, with one budget per kind
// of call. It lives in memory, so each replica limits on its own; the
// per-account limits in the database are the ones that hold across replicas.
type ipLimiter struct {
	mu      sync.Mutex
	r       rate.Limit
	burst   int
	clients map[string]*ipEntry
	sweep   time.Time
}

type ipEntry struct {
	lim  *rate.Limiter
	seen time.Time
}

func newIPLimiter(perSecond float64, burst int) *ipLimiter {
	return &ipLimiter{r: rate.Limit(perSecond), burst: burst, clients: map[string]*ipEntry{}}
}

// allow takes one attempt from ip's budget for calls of this kind.
//
// Returns ERateLimited when the budget is spent.
func (l *ipLimiter) allow(kind, ip string) error {
	if l == nil || l.r <= 0 || ip == "" {
		return nil
	}
	key := kind + " " + ip
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	// Forget idle addresses now and then so the map cannot grow without bound.
	if now.Sub(l.sweep) > time.Minute {
		for k, e := range l.clients {
			if now.Sub(e.seen) > 10*time.Minute {
				delete(l.clients, k)
			}
		}
		l.sweep = now
	}
	e, ok := l.clients[key]
	if !ok {
		e = &ipEntry{lim: rate.NewLimiter(l.r, l.burst)}
		l.clients[key] = e
	}
	e.seen = now
	r := e.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		d = d.Round(time.Second) + time.Second
		return &ctalk.Error{
			Code:       ctalk.ERateLimited,
			Message:    fmt.Sprintf("too many attempts from this address, retry after %s (in %s)", now.Add(d).UTC().Format(time.RFC3339), d),
			RetryAfter: d,
		}
	}
	return nil
}
