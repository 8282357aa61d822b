package channels

import (
	"fmt"
	"sync"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestPostsAndReadsDoNotBlockEachOther posts urgent @channel messages to two
// channels, filing an alert for every other member, while every member
// reads their unread messages of both channels and claims their alerts,
// all at once: no call may fail, and each member gets each message once,
// and each alert once.
func TestPostsAndReadsDoNotBlockEachOther(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		members := []ctalk.Caller{alice, bob, carol}
		for _, ch := range []string{"one", "two"} {
			must(s.Create(ctx, alice, NewChannel{Name: ch, Members: []string{"bob", "carol"}}))
		}
		const posts = 15
		var mu sync.Mutex
		messages, alerts := map[string]int{}, map[string]int{}
		var wg, posting sync.WaitGroup
		stop := make(chan struct{})
		for _, m := range members {
			wg.Go(func() {
				for done := false; !done; {
					select {
					case <-stop:
						done = true // one more round after the last post
					default:
					}
					d, err := s.Unread(ctx, m, "")
					if err != nil {
						t.Errorf("%s's unread: %v", m.UserID, err)
						return
					}
					as, err := s.Alerts(ctx, m)
					if err != nil {
						t.Errorf("%s's alerts: %v", m.UserID, err)
						return
					}
					mu.Lock()
					for _, msg := range d.Messages {
						messages[m.UserID+" "+msg.ID]++
					}
					for _, a := range as {
						alerts[m.UserID+" "+a.MessageID]++
					}
					mu.Unlock()
				}
			})
		}
		for i, m := range members {
			posting.Go(func() {
				for n := range posts {
					ch := []string{"one", "two"}[n%2]
					if _, err := s.Post(ctx, m, Post{Channel: ch, Text: fmt.Sprintf("@channel %d.%d", i, n), Priority: PriorityUrgent}); err != nil {
						t.Errorf("post: %v", err)
					}
				}
			})
		}
		posting.Wait()
		close(stop)
		wg.Wait()
		// Whatever the last rounds left is read now.
		for _, m := range members {
			for {
				d := must(s.Unread(ctx, m, ""))
				as := must(s.Alerts(ctx, m))
				for _, msg := range d.Messages {
					messages[m.UserID+" "+msg.ID]++
				}
				for _, a := range as {
					alerts[m.UserID+" "+a.MessageID]++
				}
				if len(d.Messages) == 0 && len(as) == 0 {
					break
				}
			}
		}
		for k, n := range messages {
			if n != 1 {
				t.Errorf("message %s read %d times", k, n)
			}
		}
		for k, n := range alerts {
			if n != 1 {
				t.Errorf("alert %s handed over %d times", k, n)
			}
		}
		// Each member's own posts are neither unread nor alerts for them
		// (unless something else was unread before them).
		if got, want := len(alerts), len(members)*posts*(len(members)-1); got != want {
			t.Errorf("%d alerts handed over, want %d", got, want)
		}
	})
}
