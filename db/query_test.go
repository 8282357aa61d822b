package db_test

import (
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestQuerierTranslatesErrors checks that every way to run a statement
// returns errors already translated, inside a Write or a Tx as well as
// outside, so that no caller has to remember it: Exec, QueryRow's Scan,
// Query, and a missing row stays sql.ErrNoRows.
func TestQuerierTranslatesErrors(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		const insert = `INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ('acme', 'Acme', 'x', $1)`
		if _, err := dbtest.Exec(d, insert, d.Now()); err != nil {
			t.Fatal(err)
		}
		check := func(what string, err error, want ctalk.Code) {
			t.Helper()
			if got := ctalk.ErrorCode(err); got != want {
				t.Errorf("%s: code %q, want %q (err %v)", what, got, want, err)
			}
		}
		d.Write(ctx, func(q db.Querier) error {
			_, err := q.Exec(ctx, insert, d.Now())
			check("Exec in Write", err, ctalk.EConflict)
			return nil
		})
		d.Tx(ctx, func(q db.Querier) error {
			var id string
			err := q.QueryRow(ctx, `INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ('acme', 'Acme', 'x', $1) RETURNING id`, d.Now()).Scan(&id)
			check("QueryRow in Tx", err, ctalk.EConflict)
			return nil
		})
		d.Tx(ctx, func(q db.Querier) error {
			rows, err := q.Query(ctx, `INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ('nope', 'u', 'U', 'x', 'member', $1, $1) RETURNING id`, d.Now())
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
			check("Query in Tx", err, ctalk.ENotFound)
			return nil
		})
		var name string
		err := d.QueryRow(ctx, `SELECT name FROM orgs WHERE id = 'nobody'`).Scan(&name)
		if !errors.Is(err, sql.ErrNoRows) {
			t.Errorf("a missing row: %v, want sql.ErrNoRows", err)
		}
	})
}

// TestAfterCommit calls a transaction's hooks once it commits, once per
// key, and never when it rolls back; outside a transaction at once.
func TestAfterCommit(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		var calls []string
		err := d.Tx(ctx, func(q db.Querier) error {
			db.AfterCommit(q, "a", func() { calls = append(calls, "a") })
			db.AfterCommit(q, "b", func() { calls = append(calls, "b") })
			db.AfterCommit(q, "a", func() { calls = append(calls, "a again") })
			if len(calls) != 0 {
				t.Errorf("hooks ran before the commit: %v", calls)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(calls); got != "[a b]" {
			t.Fatalf("after the commit %s, want [a b]", got)
		}
		calls = nil
		_ = d.Tx(ctx, func(q db.Querier) error {
			db.AfterCommit(q, "a", func() { calls = append(calls, "a") })
			return errors.New("roll back")
		})
		if len(calls) != 0 {
			t.Fatalf("hooks ran after a rollback: %v", calls)
		}
		_ = d.Write(ctx, func(q db.Querier) error {
			db.AfterCommit(q, "a", func() { calls = append(calls, "a") })
			if len(calls) != 1 {
				t.Errorf("a hook outside a transaction did not run at once")
			}
			return nil
		})
	})
}
