package inbox_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/wait"
)

// seedUsers creates org acme with the given users.
func seedUsers(t testing.TB, d *db.DB, users ...string) {
	t.Helper()
	now := d.Now()
	err := d.Tx(dbtest.Operator(), func(tx db.Querier) error {
		if _, err := tx.Exec(dbtest.Operator(), `INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ('acme', 'Acme', 'x', $1)`, now); err != nil {
			return err
		}
		for _, u := range users {
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

// replicas opens n pools on one fresh database of engine e, as n replicas
// of the server would, all reading one clock.
func replicas(t *testing.T, e db.Engine, n int, clock func() time.Time) []*db.DB {
	t.Helper()
	cfg := dbtest.Config(t, e)
	var out []*db.DB
	for range n {
		d, err := db.Open(dbtest.Operator(), cfg)
		if err != nil {
			t.Fatalf("open %s: %v", e, err)
		}
		t.Cleanup(func() { d.Close() })
		d.Now = clock
		out = append(out, d)
	}
	return out
}

// concurrently runs ask(i) for i in [0, n) at once and returns how many
// succeeded; every failure must be rate_limited.
func concurrently(t *testing.T, n int, ask func(i int) error) int {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		ok    int
		start = make(chan struct{})
	)
	for i := range n {
		wg.Go(func() {
			<-start
			err := ask(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case ctalk.ErrorCode(err) != ctalk.ERateLimited:
				t.Errorf("ask %d: %v; want success or rate_limited", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	return ok
}

func countAsked(t *testing.T, d *db.DB, asker string, since time.Time) int {
	t.Helper()
	var n int
	if err := d.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM questions WHERE org_id = 'acme' AND asker_id = $1 AND created_at >= $2`, asker, since).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestAskLimitsHoldUnderConcurrency asks past both limits at once, from one
// process and from two replicas on one database: exactly the limit is
// stored, the rest are refused.
func TestAskLimitsHoldUnderConcurrency(t *testing.T) {
	t.Parallel()
	const (
		perMinute  = 5
		recipients = 12
		loopMax    = 3
		loopAsks   = 5
		rounds     = 8
	)
	users := []string{"a"}
	for i := range recipients {
		users = append(users, fmt.Sprint("r", i))
	}
	for _, e := range dbtest.Engines {
		for _, n := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/replicas=%d", e, n), func(t *testing.T) {
				var mu sync.Mutex
				now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
				advance := func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(time.Hour); return now }
				dbs := replicas(t, e, n, clock)
				seedUsers(t, dbs[0], users...)
				service := func(cfg inbox.Config) []*inbox.Service {
					var out []*inbox.Service
					for _, d := range dbs {
						out = append(out, inbox.NewService(d, cfg, wait.NewBroker()))
					}
					return out
				}
				rate, loop := inbox.DefaultConfig(), inbox.DefaultConfig()
				rate.AsksPerMinute, rate.LoopMax = perMinute, 0
				loop.AsksPerMinute, loop.LoopMax = 0, loopMax
				rateSvc, loopSvc := service(rate), service(loop)
				ctx := dbtest.Operator()

				for round := range rounds {
					since := advance()
					got := concurrently(t, recipients, func(i int) error {
						_, err := rateSvc[i%n].Ask(ctx, acme("a"), inbox.Ask{To: users[1+i], Text: fmt.Sprint("rate ", round, i)})
						return err
					})
					if stored := countAsked(t, dbs[0], "a", since); got != perMinute || stored != perMinute {
						t.Fatalf("round %d: ASKS_PER_MINUTE=%d, %d concurrent asks to %d people: %d succeeded, %d stored; want %d", round, perMinute, recipients, recipients, got, stored, perMinute)
					}

					since = advance()
					// Both directions count toward the pair's loop breaker.
					got = concurrently(t, loopAsks, func(i int) error {
						from, to := "a", "r0"
						if i%2 == 1 {
							from, to = to, from
						}
						_, err := loopSvc[i%n].Ask(ctx, acme(from), inbox.Ask{To: to, Text: fmt.Sprint("loop ", round, i)})
						return err
					})
					if stored := countAsked(t, dbs[0], "a", since) + countAsked(t, dbs[0], "r0", since); got != loopMax || stored != loopMax {
						t.Fatalf("round %d: LOOP_MAX_QUESTIONS=%d, %d concurrent asks in one pair: %d succeeded, %d stored; want %d", round, loopMax, loopAsks, got, stored, loopMax)
					}
				}
			})
		}
	}
}
