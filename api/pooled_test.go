package api_test

import (
	"database/sql"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/golang-migrate/migrate/v4/database"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/syncbuf"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestPooledDatabaseURL runs ctalk with DATABASE_URL through a PgBouncer in
// transaction mode and DATABASE_URL_UNPOOLED straight to Postgres, as hosted
// Postgres is often set up: migrations take their lock on the direct URL,
// every tool works through the pooler, and a wake-up crosses replicas
// through the direct URL's listener, not the slow re-check.
func TestPooledDatabaseURL(t *testing.T) {
	t.Parallel()
	p := dbtest.PgBouncer(t)
	cfg := db.Config{
		URL:       testkit.WithAppName(t, p.URL, "ctalk-pooled"),
		DirectURL: testkit.WithAppName(t, p.DirectURL, "ctalk-direct"),
		Logger:    slog.New(slog.NewJSONHandler(&syncbuf.Buffer{}, nil)),
	}
	ctx := dbtest.Operator()
	admin, err := sql.Open("pgx", p.DirectURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	// Hold the migrations' lock, so that the migrating server waits for it
	// where it asks for it, and look at who waits.
	holder, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	// golang-migrate's lock on the migrations table of the database's
	// public schema.
	lockID, err := database.GenerateAdvisoryLockId(p.Name, "public", "schema_migrations")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, "SELECT pg_advisory_lock($1)", lockID); err != nil {
		t.Fatal(err)
	}
	type opened struct {
		d   *db.DB
		err error
	}
	done := make(chan opened, 1)
	go func() {
		d, err := db.Open(ctx, cfg)
		done <- opened{d, err}
	}()
	var waiter string
	for deadline := time.Now().Add(30 * time.Second); waiter == ""; {
		err := admin.QueryRowContext(ctx, `
			SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND NOT l.granted AND a.datname = $1`, p.Name).Scan(&waiter)
		if err != nil && err != sql.ErrNoRows {
			t.Fatal(err)
		}
		if waiter == "" && time.Now().After(deadline) {
			t.Fatal("no connection waited for the migration lock within 30 s")
		}
		if waiter == "" {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if waiter != "ctalk-direct" {
		t.Errorf("the migration lock was asked for on a connection of %q, want the direct URL's (ctalk-direct)", waiter)
	}
	if _, err := holder.ExecContext(ctx, "SELECT pg_advisory_unlock_all()"); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil {
		t.Fatalf("open through the pooler: %v", o.err)
	}
	d1 := o.d
	t.Cleanup(func() { d1.Close() })
	var held int
	if err := admin.QueryRowContext(ctx, `
		SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND a.datname = $1`, p.Name).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if held != 0 {
		t.Errorf("%d advisory locks are still held after migrating: the unlock went to another server connection than the lock", held)
	}
	d2, err := db.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d2.Close() })

	// The re-check is far longer than the wait, so only a notification can
	// wake the waiter in time.
	slow := func(c *inbox.Config) { c.Recheck = time.Hour }
	one := start(t, db.Postgres, options{SharedWith: &env{DB: d1}, Inbox: slow})
	two := start(t, db.Postgres, options{SharedWith: &env{DB: d2}, Inbox: slow})
	for i, era := range eras {
		t.Run(era, func(t *testing.T) {
			orgID := []string{"pooled-a", "pooled-b"}[i]
			u := one.Org(t, era, orgID)
			bob := u["bob"]
			alice := two.Connect(t, era, one.Login(t, one.Connect(t, era, ""), orgID, "alice"))
			ok(t, alice, "whoami", nil)

			got := make(chan map[string]any, 1)
			go func() { got <- ok(t, alice, "wait_for_inbox", map[string]any{"timeout_s": 20}) }()
			testkit.WaitFor(t, 10*time.Second, "alice waiting on the second server", func() (bool, error) {
				return two.Broker.Waiting() > 0, nil
			})
			id := ok(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": "through the pooler?"})["message_id"].(string)
			var w map[string]any
			select {
			case w = <-got:
			case <-time.After(40 * time.Second):
				t.Fatal("wait_for_inbox did not return within 40 s")
			}
			if qs, _ := w["questions"].([]any); len(qs) != 1 || qs[0].(map[string]any)["message_id"] != id {
				t.Fatalf("wait_for_inbox on the other replica = %v; want the question, woken by a notification through the direct URL", w)
			}
			ok(t, alice, "propose_response", map[string]any{"message_id": id, "draft_text": "yes"})
			ok(t, alice, "send_response", map[string]any{"message_id": id, "final_text": "yes"})
			r := ok(t, bob, "check_replies", nil)
			if rs, _ := r["replies"].([]any); len(rs) != 1 {
				t.Fatalf("check_replies through the pooler = %v", r)
			}
		})
	}
}

// TestPooledDatabaseURLIsDetected opens ctalk with only a pooled URL: the
// log says that wake-ups and migrations need DATABASE_URL_UNPOOLED, and
// queries still work through the pooler. With the direct URL nothing is
// said.
func TestPooledDatabaseURLIsDetected(t *testing.T) {
	t.Parallel()
	p := dbtest.PgBouncer(t)
	for _, c := range []struct {
		name, url string
		warned    bool
	}{{"pooled", p.URL, true}, {"direct", p.DirectURL, false}} {
		t.Run(c.name, func(t *testing.T) {
			logs := &syncbuf.Buffer{}
			d, err := db.Connect(dbtest.Operator(), db.Config{URL: c.url, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			warned := strings.Contains(logs.String(), "DATABASE_URL_UNPOOLED")
			if warned != c.warned {
				t.Fatalf("warned about a pooled URL: %v, want %v; log:\n%s", warned, c.warned, logs.String())
			}
			// The same query many times, from several connections at once:
			// with named prepared statements, through a transaction-mode
			// pooler this fails as soon as a client connection is served by
			// a server connection that did not prepare it.
			errs := make(chan error, 8)
			for range 8 {
				go func() {
					for i := range 25 {
						var n int
						if err := d.QueryRow(dbtest.Operator(), "SELECT count(*) FROM pg_class WHERE relpages >= $1", i).Scan(&n); err != nil {
							errs <- err
							return
						}
					}
					errs <- nil
				}()
			}
			for range 8 {
				if err := <-errs; err != nil {
					t.Fatalf("query through the pooler: %v", err)
				}
			}
		})
	}
}
