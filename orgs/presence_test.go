package orgs_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/syncbuf"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
)

// TestPresenceWritesQueuedTogetherShareATransaction shows that the presence
// writes queued while the writer was busy are made in one transaction (on
// Postgres the rows they wrote carry one transaction id), and that a write
// that fails in it, a mark of a user who is gone, is left out alone: the
// others are made one at a time after.
func TestPresenceWritesQueuedTogetherShareATransaction(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		p := orgs.NewPresence(d, slog.Default())
		// Queued before Run starts, as they queue while it writes.
		p.Seen(ctalk.Caller{OrgID: "a", UserID: "alice"})
		p.Waiting(ctalk.Caller{OrgID: "a", UserID: "bob"})
		p.Seen(ctalk.Caller{OrgID: "a", UserID: "bob"})
		ctx, cancel := context.WithCancel(dbtest.Operator())
		defer cancel()
		go p.Run(ctx)
		written := func(ctx context.Context) error {
			return testkit.Poll(ctx, 10*time.Second, 5*time.Millisecond, func() (bool, error) {
				var n int
				err := d.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM users WHERE org_id = 'a' AND last_seen_at IS NOT NULL) + (SELECT COUNT(*) FROM presence_waits WHERE org_id = 'a')`).Scan(&n)
				return n == 3, err
			})
		}
		if err := written(ctx); err != nil {
			t.Fatalf("the queued writes were not all made: %v", err)
		}
		if d.Engine == db.Postgres {
			var txs int
			if err := d.QueryRow(ctx, `SELECT COUNT(DISTINCT x) FROM (
				SELECT xmin::text AS x FROM users WHERE org_id = 'a' AND last_seen_at IS NOT NULL
				UNION ALL SELECT xmin::text FROM presence_waits WHERE org_id = 'a') t`).Scan(&txs); err != nil {
				t.Fatal(err)
			}
			if txs != 1 {
				t.Fatalf("the queued writes were made in %d transactions, want 1", txs)
			}
		}

		// A failing write among them: the others are still made.
		cancel()
		ctx, cancel = context.WithCancel(dbtest.Operator())
		defer cancel()
		if err := d.Write(ctx, func(q db.Querier) error {
			if _, err := q.Exec(ctx, `UPDATE users SET last_seen_at = NULL WHERE org_id = 'a'`); err != nil {
				return err
			}
			_, err := q.Exec(ctx, `DELETE FROM presence_waits`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		p = orgs.NewPresence(d, slog.Default())
		p.Seen(ctalk.Caller{OrgID: "a", UserID: "alice"})
		p.Waiting(ctalk.Caller{OrgID: "a", UserID: "ghost"}) // no such user: its mark fails
		p.Waiting(ctalk.Caller{OrgID: "a", UserID: "bob"})
		p.Seen(ctalk.Caller{OrgID: "a", UserID: "bob"})
		go p.Run(ctx)
		if err := written(ctx); err != nil {
			t.Fatalf("after a failed write, the others were not all made: %v", err)
		}
	})
}

// TestPresenceBatchesOfTwoReplicasDoNotDeadlock: two replicas' batches that
// write the same users' last-seen times, queued in opposite orders, run at
// once; they take their locks in one order, so neither fails on a deadlock
// (which Postgres would detect after a second and the writer would make up
// for one write at a time).
func TestPresenceBatchesOfTwoReplicasDoNotDeadlock(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		ctx, cancel := context.WithCancel(dbtest.Operator())
		defer cancel()
		const users = 60
		var ids []string
		for i := range users {
			id := fmt.Sprintf("u%02d", i)
			if _, err := f.orgs.AddUser(ctx, "a", orgs.NewUser{ID: id, Name: id, Password: userPW}); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		logs := &syncbuf.Buffer{}
		log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		one, two := orgs.NewPresence(d, log), orgs.NewPresence(d, log)
		for i := range users {
			one.Seen(ctalk.Caller{OrgID: "a", UserID: ids[i]})
			two.Seen(ctalk.Caller{OrgID: "a", UserID: ids[users-1-i]})
		}
		go one.Run(ctx)
		go two.Run(ctx)
		err := testkit.Poll(ctx, 10*time.Second, 5*time.Millisecond, func() (bool, error) {
			var n int
			err := d.QueryRow(ctx, `SELECT COUNT(*) FROM users WHERE org_id = 'a' AND last_seen_at IS NOT NULL`).Scan(&n)
			return n == users, err
		})
		if err != nil {
			t.Fatalf("the last-seen writes were not all made: %v", err)
		}
		cancel()
		if strings.Contains(logs.String(), "failed together") {
			t.Fatalf("a batch failed:\n%s", logs.String())
		}
	})
}
