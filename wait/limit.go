package wait

import "sync"

// Limit caps what one user may hold open at once on one replica: event
// streams, long-polls. Each is a connection and a goroutine held for
// minutes, which one token must not multiply without bound.
type Limit struct {
	max  int
	mu   sync.Mutex
	open map[string]int
}

// NewLimit returns a Limit of max per user.
func NewLimit(max int) *Limit { return &Limit{max: max, open: map[string]int{}} }

// Max is the limit's cap per user.
func (l *Limit) Max() int { return l.max }

// Take counts one more held open by the user, refusing (false) one over the
// cap. Call release when it closes.
func (l *Limit) Take(orgID, userID string) (release func(), ok bool) {
	key := userKey(orgID, userID)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key] >= l.max {
		return nil, false
	}
	l.open[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.open[key]--; l.open[key] == 0 {
				delete(l.open, key)
			}
		})
	}, true
}
