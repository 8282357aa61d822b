package inbox_test

import (
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/wait"
)

// events returns the kind, person and subject of every queued
// notification, oldest first, once n has read the questions of SQLite's
// outbox.
func events(t *testing.T, d *db.DB, n *notify.Service) [][3]string {
	t.Helper()
	if err := n.Expand(dbtest.Operator()); err != nil {
		t.Fatal(err)
	}
	rows, err := d.Query(dbtest.Operator(), `SELECT kind, user_id, subject FROM notify_events ORDER BY created_at, id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][3]string
	for rows.Next() {
		var e [3]string
		if err := rows.Scan(&e[0], &e[1], &e[2]); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// TestChangesQueueTheirNotifications asks, drafts in human mode and
// answers, then asks and declines, and asks and withdraws: each change
// queued its notification for the right person; an ask refused by the
// rate limit, and a retry of an ask, queued nothing.
func TestChangesQueueTheirNotifications(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		cfg := inbox.DefaultConfig()
		cfg.AsksPerMinute, cfg.LoopMax = 3, 1<<30
		s := inbox.NewService(d, cfg, wait.NewBroker())
		n := notify.NewService(d, notify.DefaultConfig(), nil)
		s.Notify(n)
		ctx := dbtest.Operator()
		// b can be reached (a webhook); the events for a are queued to end
		// the pending reminders of their questions.
		if _, _, err := n.AddWebhook(ctx, "acme", "b", "b", "https://hooks.example.net/b", notify.FormatJSON); err != nil {
			t.Fatal(err)
		}
		if _, err := dbtest.Exec(d, `UPDATE orgs SET approval_mode = 'human' WHERE id = 'acme'`); err != nil {
			t.Fatal(err)
		}
		q1, err := s.Ask(ctx, acme("a"), inbox.Ask{To: "b", Text: "release date?", IdempotencyKey: "k1"})
		if err != nil {
			t.Fatal(err)
		}
		// The worker reads the question (on SQLite, from its row) at once.
		if err := n.Expand(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Ask(ctx, acme("a"), inbox.Ask{To: "b", Text: "release date?", IdempotencyKey: "k1"}); err != nil {
			t.Fatal(err)
		}
		dr, _, err := s.Propose(ctx, acme("b"), q1.ID, "Friday")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Approve(ctx, acme("b"), q1.ID, dr.Version); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Send(ctx, acme("b"), q1.ID, "Friday"); err != nil {
			t.Fatal(err)
		}
		q2, err := s.Ask(ctx, acme("a"), inbox.Ask{To: "b", Text: "budget?"})
		if err != nil {
			t.Fatal(err)
		}
		// The worker reads the question (on SQLite, from its row) at once.
		if err := n.Expand(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Decline(ctx, acme("b"), q2.ID, "ask finance"); err != nil {
			t.Fatal(err)
		}
		q3, err := s.Ask(ctx, acme("a"), inbox.Ask{To: "b", Text: "lunch?"})
		if err != nil {
			t.Fatal(err)
		}
		// The worker reads the question (on SQLite, from its row) at once.
		if err := n.Expand(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Ask(ctx, acme("a"), inbox.Ask{To: "b", Text: "one too many"}); err == nil {
			t.Fatal("the fourth ask in a minute was not refused")
		}
		if _, err := s.Withdraw(ctx, acme("a"), q3.ID); err != nil {
			t.Fatal(err)
		}
		want := [][3]string{
			{"question", "b", q1.ID}, {"draft", "b", q1.ID}, {"answered", "a", q1.ID},
			{"question", "b", q2.ID}, {"declined", "a", q2.ID},
			{"question", "b", q3.ID}, {"withdrawn", "b", q3.ID},
		}
		got := events(t, d, n)
		if len(got) != len(want) {
			t.Fatalf("queued %v,\nwant %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("event %d = %v, want %v (all: %v)", i, got[i], want[i], got)
			}
		}
	})
}
