package channels

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/wait"
)

// seedPeople adds n members to org acme, named prefix00, prefix01, ...
func seedPeople(t *testing.T, d *db.DB, prefix string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%02d", prefix, i)
		if _, err := dbtest.Exec(d, `INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ('acme', $1, $1, 'x', 'member', $2, $2)`, ids[i], d.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// waitResult is what a wait returned.
type waitResult struct {
	d   *Delivery
	err error
}

// waitAll starts a wait of each of ids on channel name after seq 0, and
// returns once all of them wait, with where each will report.
func waitAll(t *testing.T, s *Service, ids []string, name string) []chan waitResult {
	t.Helper()
	results := make([]chan waitResult, len(ids))
	for i, id := range ids {
		results[i] = make(chan waitResult, 1)
		go func() {
			after := int64(0)
			d, err := s.Wait(dbtest.Operator(), ctalk.Caller{OrgID: "acme", UserID: id}, name, &after, wait.Options{Timeout: 30 * time.Second})
			results[i] <- waitResult{d, err}
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); s.waker.Waiting() < len(ids); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the waiters did not all subscribe")
		}
	}
	return results
}

// betweenOnce is what a test does once between the two reads of a shared
// page (see Service.between).
type betweenOnce struct {
	once sync.Once
	do   func()
}

// TestLeaverNeverHandedLaterPost races members leaving a channel, and a post
// made once they have left, against the waiters a post woke, many times: the
// first read of the woken waiters is held between its read of the messages
// and its check of who is a member until the leaves and the later post have
// committed, where a real leave and post can fall. No leaver is ever handed
// the post made after they left (they are refused), and every member who
// stayed gets the post that woke them. get_messages and search_messages are
// held the same way.
func TestLeaverNeverHandedLaterPost(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		noRecheck(s)
		const rounds, waiters, leavers = 30, 6, 3
		ids := seedPeople(t, d, "w", waiters)
		// The hook is set once, before any wait starts, and each round arms
		// it with what to do once between the two reads.
		var armed atomic.Pointer[betweenOnce]
		s.between = func() {
			if b := armed.Load(); b != nil {
				b.once.Do(b.do)
			}
		}
		for round := range rounds {
			name := fmt.Sprintf("race-%d", round)
			must(s.Create(ctx, alice, NewChannel{Name: name, Members: ids}))
			results := waitAll(t, s, ids, name)
			committed := make(chan struct{})
			armed.Store(&betweenOnce{do: func() { <-committed }})
			woke := must(s.Post(ctx, alice, Post{Channel: name, Text: "before"}))
			var late *Message
			go func() {
				defer close(committed)
				var wg sync.WaitGroup
				for _, id := range ids[:leavers] {
					wg.Go(func() { must(s.Leave(ctx, ctalk.Caller{OrgID: "acme", UserID: id}, name)) })
				}
				wg.Wait()
				late = must(s.Post(ctx, alice, Post{Channel: name, Text: "after they left"}))
			}()
			got := make([]waitResult, waiters)
			for i := range ids {
				got[i] = <-results[i]
			}
			<-committed
			armed.Store(nil)
			for i, id := range ids {
				r := got[i]
				var handed []string
				if r.d != nil {
					for _, m := range r.d.Messages {
						handed = append(handed, m.ID)
					}
				}
				if i < leavers {
					if slices.Contains(handed, late.ID) {
						t.Fatalf("round %d: %s left #%s and was then handed the post made after (seq %d): %q", round, id, name, late.Seq, texts(r.d.Messages))
					}
					continue
				}
				if r.err != nil || !slices.Contains(handed, woke.ID) {
					t.Fatalf("round %d: %s, who stayed: %v, %q; want the post that woke them", round, id, r.err, handed)
				}
			}
		}

		// get_messages reads in the same order: a leave and a post committed
		// between its two reads find the reader gone.
		for round := range rounds {
			name := fmt.Sprintf("read-%d", round)
			must(s.Create(ctx, alice, NewChannel{Name: name, Members: []string{"bob"}}))
			var late *Message
			armed.Store(&betweenOnce{do: func() {
				must(s.Leave(ctx, bob, name))
				late = must(s.Post(ctx, alice, Post{Channel: name, Text: "after bob left"}))
			}})
			p, err := s.Messages(ctx, bob, name, Read{Limit: 10})
			armed.Store(nil)
			if err == nil {
				t.Fatalf("round %d: get_messages of #%s by bob, who left before %s was posted, returned %q", round, name, late.ID, texts(p.Messages))
			}
			wantCode(t, err, ctalk.EForbidden)
		}

		// A search reads the reader's channels, then searches them (on
		// Postgres in two statements): a leave and a post committed in
		// between leave the post unfound.
		for round := range rounds {
			name := fmt.Sprintf("find-%d", round)
			must(s.Create(ctx, alice, NewChannel{Name: name, Members: []string{"bob"}}))
			must(s.Post(ctx, alice, Post{Channel: name, Text: "launch plan"}))
			var late *Message
			armed.Store(&betweenOnce{do: func() {
				must(s.Leave(ctx, bob, name))
				late = must(s.Post(ctx, alice, Post{Channel: name, Text: "launch moved"}))
			}})
			found := must(s.Search(ctx, bob, Search{Query: "launch", Limit: 20}))
			armed.Store(nil)
			for _, m := range found {
				if late != nil && m.ID == late.ID {
					t.Fatalf("round %d: bob's search found %s, posted to #%s after he left", round, late.ID, name)
				}
			}
		}
	})
}
