package db_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestTxLocked commits what the first round trip, fn and the statements
// sent with the commit wrote, all together, and runs the commit hooks;
// when a statement sent with the commit fails, nothing is kept, no hook
// runs, and the connection goes back to the pool out of the transaction.
func TestTxLocked(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		if d.Engine != db.Postgres {
			t.Skip("TxLocked is Postgres's")
		}
		ctx := context.Background()
		// A connection of its own watches the pool's: a statement through
		// the pool could take the very connection it looks for.
		watch, err := sql.Open("pgx", os.Getenv("TEST_DATABASE_URL"))
		if err != nil {
			t.Fatal(err)
		}
		defer watch.Close()
		insert := func(id, mark string) string {
			return fmt.Sprintf(`INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ('%s', '%s', 'x', $1) /* %s */ RETURNING id`, id, id, mark)
		}
		var calls []string
		run := func(first, fnID, last, mark string) (string, error) {
			var got string
			err := d.TxLocked(ctx, []int64{db.LockID("tx locked test")}, []db.Stmt{{Query: insert(first, mark), Args: []any{d.Now()}, Dest: []any{&got}}},
				func(q db.Querier) ([]db.Stmt, error) {
					if _, err := q.Exec(ctx, insert(fnID, mark), d.Now()); err != nil {
						return nil, err
					}
					db.AfterCommit(q, "k", func() { calls = append(calls, first) })
					return []db.Stmt{{Query: insert(last, mark), Args: []any{d.Now()}}}, nil
				})
			return got, err
		}
		got, err := run("a1", "a2", "a3", "ok")
		if err != nil || got != "a1" {
			t.Fatalf("TxLocked = %q, %v; want a1 read by the first round trip", got, err)
		}
		if fmt.Sprint(calls) != "[a1]" {
			t.Errorf("hooks after the commit: %v, want [a1]", calls)
		}
		calls = nil
		_, err = run("b1", "b2", "a3", "txlocked-aborted")
		if ctalk.ErrorCode(err) != ctalk.EConflict {
			t.Errorf("a duplicate sent with the commit: %v, want a conflict", err)
		}
		if len(calls) != 0 {
			t.Errorf("hooks ran after a rollback: %v", calls)
		}
		var n int
		err = watch.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%' AND query LIKE '%txlocked-aborted%'`).Scan(&n)
		if err != nil || n != 0 {
			t.Errorf("%d connections left in the failed transaction, holding its locks (%v), want 0", n, err)
		}
		if err := d.QueryRow(ctx, `SELECT COUNT(*) FROM orgs WHERE id IN ('a1', 'a2', 'a3', 'b1', 'b2')`).Scan(&n); err != nil || n != 3 {
			t.Errorf("%d orgs kept (%v), want the 3 of the committed transaction", n, err)
		}
		_, err = run("c1", "a1", "c3", "failed-fn")
		if ctalk.ErrorCode(err) != ctalk.EConflict {
			t.Errorf("a failing statement of fn: %v, want a conflict", err)
		}
		if err := d.QueryRow(ctx, `SELECT COUNT(*) FROM orgs WHERE id = 'c1'`).Scan(&n); err != nil || n != 0 {
			t.Errorf("the first round trip's write kept after fn failed: %d (%v)", n, err)
		}
	})
}
