package db_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestPurgeOrgCoversTableAddedLater: a table added after the deletion was
// written, with an org_id column and a foreign key that does not cascade,
// is emptied of the org's rows too, in an order that keeps every key,
// and another org's rows stay.
func TestPurgeOrgCoversTableAddedLater(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		now := time.Now().UTC()
		for _, q := range []string{
			`CREATE TABLE later_notes (org_id TEXT NOT NULL, user_id TEXT NOT NULL, note TEXT NOT NULL,
				FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id))`,
			`CREATE TABLE later_replies (org_id TEXT NOT NULL, user_id TEXT NOT NULL,
				FOREIGN KEY (org_id) REFERENCES orgs (id))`,
		} {
			dbtest.ExecAsOwner(t, d, q)
		}
		for _, org := range []string{"acme", "globex"} {
			for _, q := range []string{
				`INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ($1, $1, 'x', $2)`,
				`INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ($1, 'bob', 'Bob', 'x', 'member', $2, $2)`,
				`INSERT INTO later_notes (org_id, user_id, note) VALUES ($1, 'bob', 'a note')`,
				`INSERT INTO later_replies (org_id, user_id) VALUES ($1, 'bob')`,
			} {
				args := []any{org}
				if strings.Contains(q, "$2") {
					args = append(args, now)
				}
				if _, err := dbtest.Exec(d, q, args...); err != nil {
					t.Fatal(err)
				}
			}
		}
		tables, err := d.OrgTables(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		pos := map[string]int{}
		for i, name := range tables {
			pos[name] = i
		}
		if _, ok := pos["later_notes"]; !ok || pos["later_notes"] > pos["users"] {
			t.Errorf("later_notes must come before users, which it references: %v", tables)
		}
		var n int64
		err = d.Tx(ctx, func(q db.Querier) (err error) {
			n, err = d.PurgeOrg(ctx, q, "acme")
			return err
		})
		if err != nil || n < 4 {
			t.Fatalf("purge: %d rows, %v", n, err)
		}
		if left := dbtest.OrgRows(t, d, "acme"); len(left) != 0 {
			t.Errorf("left: %v", left)
		}
		if kept := dbtest.OrgRows(t, d, "globex"); kept["later_notes"] != 1 || kept["later_replies"] != 1 || kept["users"] != 1 || kept["orgs"] != 1 {
			t.Errorf("the other org's rows: %v", kept)
		}
	})
}
