package inbox_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/wait"
)

// seed creates org acme with users a and b.
func seed(t testing.TB, d *db.DB) {
	t.Helper()
	now := d.Now()
	err := d.Tx(dbtest.Operator(), func(tx db.Querier) error {
		if _, err := tx.Exec(dbtest.Operator(), `INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ('acme', 'Acme', 'x', $1)`, now); err != nil {
			return err
		}
		for _, u := range []string{"a", "b"} {
			if _, err := tx.Exec(dbtest.Operator(), `INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ('acme', $1, $1, 'x', 'member', $2, $2)`, u, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func newService(d *db.DB) *inbox.Service {
	cfg := inbox.DefaultConfig()
	cfg.AsksPerMinute, cfg.LoopMax = 1<<30, 1<<30
	return inbox.NewService(d, cfg, wait.NewBroker())
}

func TestWaitsLeaveNoGoroutineOrSubscription(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(d)
		ctx := dbtest.Operator()
		before := runtime.NumGoroutine()

		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				opts := wait.Options{Timeout: 100 * time.Millisecond}
				if i%2 == 0 {
					if _, err := s.WaitInbox(ctx, acme("a"), opts, nil); err != nil {
						t.Error(err)
					}
				} else if _, err := s.WaitReply(ctx, acme("b"), "", opts); err != nil {
					t.Error(err)
				}
			})
		}
		// Some waits end by a wake-up rather than the timeout.
		if _, err := s.Ask(ctx, acme("b"), inbox.Ask{To: "a", Text: "hello"}); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if n := s.Broker().Waiting(); n != 0 {
			t.Fatalf("%d subscriptions left after every wait returned", n)
		}
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before+2 {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Fatalf("goroutines: %d before, %d after the waits\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func TestConcurrentWaitersNeverShareAQuestion(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(d)
		ctx := dbtest.Operator()
		const questions = 30
		for i := range questions {
			if _, err := s.Ask(ctx, acme("b"), inbox.Ask{To: "a", Text: fmt.Sprint("q", i)}); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for {
					got, err := s.WaitInbox(ctx, acme("a"), wait.Options{Timeout: 50 * time.Millisecond}, nil)
					if err != nil {
						t.Error(err)
						return
					}
					if got.Empty() {
						return
					}
					mu.Lock()
					for _, q := range got.Questions {
						seen[q.ID]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != questions {
			t.Fatalf("handed %d distinct questions, want %d", len(seen), questions)
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("question %s handed %d times", id, n)
			}
		}
	})
}

func TestInboxPagination(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(d)
		ctx := dbtest.Operator()
		for i := range 7 {
			if _, err := s.Ask(ctx, acme("b"), inbox.Ask{To: "a", Text: fmt.Sprint("q", i)}); err != nil {
				t.Fatal(err)
			}
		}
		var texts []string
		cursor := ""
		for page := 0; ; page++ {
			items, next, err := s.Inbox(ctx, acme("a"), 3, cursor)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				texts = append(texts, it.Text)
			}
			if next == "" {
				break
			}
			if page > 5 {
				t.Fatal("pagination does not end")
			}
			cursor = next
		}
		if got := fmt.Sprint(texts); got != "[q0 q1 q2 q3 q4 q5 q6]" {
			t.Fatalf("pages = %s, want all seven oldest first", got)
		}
		if _, _, err := s.Inbox(ctx, acme("a"), 3, "not-a-cursor"); err == nil {
			t.Fatal("a forged cursor was accepted")
		}
	})
}

func TestLostWakeUpCostsOnlyLatency(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		cfg := inbox.DefaultConfig()
		cfg.Recheck = 50 * time.Millisecond
		// Two services with separate brokers and no listener: the asker's
		// wake-up never reaches the waiter, as if the notification was lost.
		waiter := inbox.NewService(d, cfg, wait.NewBroker())
		asker := inbox.NewService(d, cfg, wait.NewBroker())
		got := make(chan *inbox.Delivery, 1)
		go func() {
			dl, err := waiter.WaitInbox(dbtest.Operator(), acme("a"), wait.Options{Timeout: 10 * time.Second}, nil)
			if err != nil {
				t.Error(err)
			}
			got <- dl
		}()
		for waiter.Broker().Waiting() == 0 {
			time.Sleep(time.Millisecond)
		}
		if _, err := asker.Ask(dbtest.Operator(), acme("b"), inbox.Ask{To: "a", Text: "lost"}); err != nil {
			t.Fatal(err)
		}
		select {
		case dl := <-got:
			if len(dl.Questions) != 1 {
				t.Fatalf("delivered %d questions, want 1", len(dl.Questions))
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the safety re-check did not deliver the question")
		}
	})
}

// acme is user id of org acme, calling.
func acme(id string) ctalk.Caller { return ctalk.Caller{OrgID: "acme", UserID: id} }
