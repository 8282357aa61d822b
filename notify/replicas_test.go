package notify_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/notify"
)

// longPoll is the poll of the workers of the wake-up tests: far longer
// than the tests wait, so that only a wake-up delivers in time.
const longPoll = 10 * time.Minute

// hookedReceiver is a receiver that b of acme added as their JSON webhook
// through s.
func hookedReceiver(t *testing.T, s *notify.Service) *receiver {
	t.Helper()
	r := newReceiver(t)
	_, secret, err := s.AddWebhook(dbtest.Operator(), "acme", "b", "b", r.URL, notify.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	r.secret = secret
	return r
}

// twoReplicas returns two replicas, each on its own pool over one seeded
// Postgres database, configured by adjust; it skips without Postgres.
func twoReplicas(t *testing.T, adjust func(*notify.Config)) ([2]*db.DB, [2]*notify.Service) {
	t.Helper()
	return twoReplicasOn(t, db.Postgres, adjust)
}

// twoReplicasOn is twoReplicas on engine e: on SQLite two pools over one
// file, as two processes would open it.
func twoReplicasOn(t *testing.T, e db.Engine, adjust func(*notify.Config)) ([2]*db.DB, [2]*notify.Service) {
	t.Helper()
	cfg := dbtest.Config(t, e)
	var dbs [2]*db.DB
	var replicas [2]*notify.Service
	for i := range replicas {
		d, err := db.Open(dbtest.Operator(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		if i == 0 {
			seed(t, d)
		}
		dbs[i], replicas[i] = d, newService(t, d, nil, adjust)
	}
	return dbs, replicas
}

// TestOtherReplicaWakesForQueuedEvents queues 50 events in one transaction
// on a replica that runs no worker, with a second replica's worker on its
// own pool over the same Postgres database idle in a poll of ten minutes:
// the second replica delivers them all long before its poll, woken by one
// notification for the transaction.
func TestOtherReplicaWakesForQueuedEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(dbtest.Operator())
	t.Cleanup(cancel)
	dbs, replicas := twoReplicas(t, func(c *notify.Config) { c.Poll = longPoll })
	queuer, worker := replicas[0], replicas[1]
	r := hookedReceiver(t, queuer)
	go queuer.Publish(ctx)
	go worker.Listen(ctx)
	go worker.Run(ctx)
	testkit.WaitFor(t, 10*time.Second, "the worker listens", func() (bool, error) { return worker.Listening(), nil })
	var notifies atomic.Int64
	dbs[0].OnStatement(func(q string) {
		if strings.Contains(q, "pg_notify") {
			notifies.Add(1)
		}
	})
	t.Cleanup(func() { dbs[0].OnStatement(nil) })
	var evs []notify.Event
	for i := range 50 {
		evs = append(evs, question(fmt.Sprint("q_", i)))
	}
	queue(t, dbs[0], queuer, evs...)
	testkit.WaitFor(t, 30*time.Second, "the other replica delivers every event, long before its poll", r.got(len(evs)))
	if n := notifies.Load(); n != 1 {
		t.Fatalf("%d notifications for one transaction, want 1", n)
	}
}

// TestQueueingWakesItsOwnWorker queues an event with the replica's worker
// idle in a poll of ten minutes: it delivers it at once, woken when the
// transaction commits.
func TestQueueingWakesItsOwnWorker(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		ctx, cancel := context.WithCancel(dbtest.Operator())
		t.Cleanup(cancel)
		s := newService(t, d, nil, func(c *notify.Config) { c.Poll = longPoll })
		r := hookedReceiver(t, s)
		go s.Run(ctx)
		queue(t, d, s, question("q_1"))
		testkit.WaitFor(t, 30*time.Second, "the worker delivers, long before its poll", r.got(1))
	})
}

// got is a condition of testkit.WaitFor: r has received n events.
func (r *receiver) got(n int) func() (bool, error) {
	return func() (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.hits) == n, nil
	}
}
