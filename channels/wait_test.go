package channels

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/wait"
)

// noRecheck makes waiters rely on wake-ups alone: a lost wake-up then shows
// as a wait that times out empty-handed.
func noRecheck(s *Service) { s.cfg.Recheck = time.Hour }

func TestWaitRefusals(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		must(s.Create(ctx, alice, NewChannel{Name: "dev"}))
		after := int64(0)
		_, err := s.Wait(ctx, bob, "", &after, wait.Options{})
		wantCode(t, err, ctalk.EInvalid)
		_, err = s.Wait(ctx, bob, "dev", nil, wait.Options{})
		wantCode(t, err, ctalk.EForbidden)
		// A zero timeout checks once and returns.
		got := must(s.Wait(ctx, alice, "", nil, wait.Options{}))
		if len(got.Messages) != 0 {
			t.Fatalf("wait with nothing new returned %q", texts(got.Messages))
		}
	})
}

// TestWaitSeesNewChannels shows that a wait on all of one's channels wakes
// for a channel one is invited to while waiting.
func TestWaitSeesNewChannels(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		noRecheck(s)
		must(s.Create(ctx, alice, NewChannel{Name: "later", Private: true}))
		done := make(chan *Delivery)
		go func() {
			got, err := s.Wait(ctx, bob, "", nil, wait.Options{Timeout: 30 * time.Second})
			if err != nil {
				t.Error(err)
			}
			done <- got
		}()
		must(s.Invite(ctx, alice, "later", []string{"bob"}))
		must(s.Post(ctx, alice, Post{Channel: "later", Text: "welcome"}))
		if got := <-done; got == nil || len(got.Messages) != 1 || got.Messages[0].Text != "welcome" {
			t.Fatalf("wait returned %+v, want the message of the channel bob was invited to", got)
		}
	})
}

// TestManyPostersManyWaiters posts from several goroutines while waiters
// read: each waiter with its own cursor gets every message once, in order,
// and two waiters sharing one read cursor split the messages between them
// without either getting one the other got.
func TestManyPostersManyWaiters(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		noRecheck(s)
		must(s.Create(ctx, alice, NewChannel{Name: "load", Members: []string{"bob", "carol"}}))
		const posters, perPoster, cursorWaiters, sharedWaiters = 4, 15, 4, 3
		const total = posters * perPoster
		opts := wait.Options{Timeout: 30 * time.Second}

		var wg sync.WaitGroup
		for w := range cursorWaiters {
			wg.Go(func() {
				after := int64(0)
				for after < total {
					got, err := s.Wait(ctx, bob, "load", &after, opts)
					if err != nil || len(got.Messages) == 0 {
						t.Errorf("cursor waiter %d after %d: %v, %d messages: a message was lost", w, after, err, len(got.Messages))
						return
					}
					for _, m := range got.Messages {
						if m.Seq != after+1 {
							t.Errorf("cursor waiter %d got seq %d after %d", w, m.Seq, after)
							return
						}
						after = m.Seq
					}
				}
			})
		}

		var mu sync.Mutex
		seen := map[string]int{}
		shared, stop := context.WithCancel(ctx)
		defer stop()
		for w := range sharedWaiters {
			wg.Go(func() {
				for shared.Err() == nil {
					got, err := s.Wait(shared, carol, "", nil, opts)
					if shared.Err() != nil {
						return
					}
					if err != nil || len(got.Messages) == 0 {
						t.Errorf("shared waiter %d: %v: a message was lost", w, err)
						stop()
						return
					}
					mu.Lock()
					for _, m := range got.Messages {
						seen[m.ID]++
					}
					if len(seen) == total {
						stop()
					}
					mu.Unlock()
				}
			})
		}

		for p := range posters {
			wg.Go(func() {
				for i := range perPoster {
					if _, err := s.Post(ctx, alice, Post{Channel: "load", Text: fmt.Sprintf("p%d-%d", p, i)}); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if len(seen) != total {
			t.Fatalf("the shared cursor's waiters got %d distinct messages, want %d", len(seen), total)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("message %s handed %d times through one read cursor", id, n)
			}
		}
	})
}

// TestWokenWaitersCheckedEach shows that the waiters one post wakes, which
// share the read of it and one check of their membership, are still each
// checked: those who left the channel while waiting are refused, and every
// other gets the message, once.
func TestWokenWaitersCheckedEach(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		noRecheck(s)
		const waiters, leavers = 24, 6
		ids := seedPeople(t, d, "w", waiters)
		must(s.Create(ctx, alice, NewChannel{Name: "all", Members: ids}))
		results := waitAll(t, s, ids, "all")
		for _, id := range ids[:leavers] {
			must(s.Leave(ctx, ctalk.Caller{OrgID: "acme", UserID: id}, "all"))
		}
		m := must(s.Post(ctx, alice, Post{Channel: "all", Text: "to everyone still here"}))
		for i, id := range ids {
			r := <-results[i]
			if i < leavers {
				wantCode(t, r.err, ctalk.EForbidden)
				continue
			}
			if r.err != nil || len(r.d.Messages) != 1 || r.d.Messages[0].ID != m.ID {
				t.Errorf("%s: %v, %+v; want the one message", id, r.err, r.d)
			}
		}
	})
}
