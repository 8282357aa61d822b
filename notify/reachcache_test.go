package notify_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/wait"
)

// TestReachChangesReachEveryReplica asks on one replica, whose worker's
// cache of where notifications go is trusted for ten minutes here, while another
// replica on the same Postgres changes where b's can go: b's webhook
// added there makes the next asks here queue b's notification, b's pause
// saved there makes them queue nothing and its end queue again, and the
// webhook's deletion makes them queue nothing, each once the change's
// announcement arrives, long before the cache would expire.
func TestReachChangesReachEveryReplica(t *testing.T) {
	ctx, cancel := context.WithCancel(dbtest.Operator())
	t.Cleanup(cancel)
	dbs, replicas := twoReplicas(t, func(c *notify.Config) { c.Poll, c.ReachTTL = longPoll, longPoll })
	asker, changer := replicas[0], replicas[1]
	go asker.ListenReach(ctx)
	testkit.WaitFor(t, 10*time.Second, "the asking replica listens", func() (bool, error) { return asker.ReachListening(), nil })
	icfg := inbox.DefaultConfig()
	icfg.AsksPerMinute, icfg.LoopMax = 1<<30, 1<<30
	in := inbox.NewService(dbs[0], icfg, wait.NewBroker())
	in.Notify(asker)
	// askQueues asks b a question and reports whether it queued an event.
	askQueues := func() (bool, error) {
		var before, after int
		if err := dbs[0].QueryRow(ctx, `SELECT COUNT(*) FROM notify_events`).Scan(&before); err != nil {
			return false, err
		}
		if _, err := in.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, inbox.Ask{To: "b", Text: "release date?"}); err != nil {
			return false, err
		}
		if err := asker.Expand(ctx); err != nil { // the worker reads the question
			return false, err
		}
		err := dbs[0].QueryRow(ctx, `SELECT COUNT(*) FROM notify_events`).Scan(&after)
		return after > before, err
	}
	for range 2 {
		if queued, err := askQueues(); err != nil || queued {
			t.Fatalf("an ask to b, whom nothing reaches, queued %v (%v)", queued, err)
		}
	}
	w, _, err := changer.AddWebhook(ctx, "acme", "b", "b", "https://hooks.example.net/b", notify.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "asks queue b's notification once the other replica added b's webhook", askQueues)
	b := ctalk.Caller{OrgID: "acme", UserID: "b"}
	for _, paused := range []bool{true, false} {
		set, err := changer.Settings(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		set.Paused = paused
		if _, err := changer.SaveSettings(ctx, b, set); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("asks queue b's notification exactly when b's pause (%v, saved on the other replica) lets them", paused), func() (bool, error) {
			queued, err := askQueues()
			return queued != paused, err
		})
	}
	if err := changer.DeleteWebhook(ctx, "acme", "b", w.ID); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "asks queue nothing once the other replica deleted it", func() (bool, error) {
		queued, err := askQueues()
		return !queued, err
	})
}
