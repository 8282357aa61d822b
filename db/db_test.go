package db_test

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/migrations"
)

func TestMigrateDownAndUp(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		v, dirty, err := d.MigrationVersion()
		if err != nil || dirty || v == 0 {
			t.Fatalf("version = %d, dirty %v, err %v; want a clean applied version", v, dirty, err)
		}
		// Versions may have gaps (each change takes its own number), so
		// the steps down are counted from the files.
		ups, _ := fs.Glob(migrations.FS, string(d.Engine)+"/*.up.sql")
		all, err := db.Migrations(d.Engine)
		if err != nil || len(all) != len(ups) || all[len(all)-1] != v {
			t.Fatalf("Migrations = %v, %v; want the %d files' versions up to %d", all, err, len(ups), v)
		}
		reverted, err := d.MigrateDown(2)
		if want := []uint{all[len(all)-1], all[len(all)-2]}; err != nil || !slices.Equal(reverted, want) {
			t.Fatalf("down 2 = %v, %v; want %v", reverted, err, want)
		}
		if err := d.MigrateUp(); err != nil {
			t.Fatal(err)
		}
		// More than are applied reverts every one, and leaves no table.
		reverted, err = d.MigrateDown(len(ups) + 5)
		if err != nil || len(reverted) != len(ups) || reverted[0] != v || reverted[len(reverted)-1] != all[0] {
			t.Fatalf("down %d = %v, %v; want all %d versions, newest first", len(ups)+5, reverted, err, len(ups))
		}
		if v, dirty, err := d.MigrationVersion(); err != nil || dirty || v != 0 {
			t.Fatalf("after down: version %d, dirty %v, err %v; want a clean version 0", v, dirty, err)
		}
		if tables := dbtest.Tables(t, d); len(tables) != 0 {
			t.Errorf("after reverting every migration, tables %v are left", tables)
		}
		// At version 0 there is nothing to revert, and that is no error.
		if reverted, err := d.MigrateDown(1); err != nil || len(reverted) != 0 {
			t.Errorf("down 1 at version 0 = %v, %v; want nothing reverted, no error", reverted, err)
		}
		if err := d.MigrateUp(); err != nil {
			t.Fatal(err)
		}
		if got, dirty, err := d.MigrationVersion(); err != nil || dirty || got != v {
			t.Fatalf("after up: version %d, dirty %v, err %v; want a clean version %d", got, dirty, err, v)
		}
	})
}

// TestMigrateUpLeavesDirtyToTheMigrator: a database at the newest version
// is left alone without a migrator, but one a failed migration left dirty
// at that version still stops the start, as the migrator says.
func TestMigrateUpLeavesDirtyToTheMigrator(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		if err := d.MigrateUp(); err != nil {
			t.Fatalf("MigrateUp on a current database: %v", err)
		}
		if _, err := dbtest.Exec(d, `UPDATE schema_migrations SET dirty = $1`, true); err != nil {
			t.Fatal(err)
		}
		// A Postgres schema goes back to the pool for the next test.
		t.Cleanup(func() { dbtest.Exec(d, `UPDATE schema_migrations SET dirty = $1`, false) })
		if err := d.MigrateUp(); err == nil || !strings.Contains(err.Error(), "Dirty") {
			t.Fatalf("MigrateUp on a dirty database = %v, want the migrator's dirty error", err)
		}
	})
}

func TestTranslateConflictAndForeignKey(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		now := d.Now()
		insert := func(tx db.Querier) error {
			_, err := tx.Exec(ctx, `INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ($1, $2, $3, $4)`, "acme", "Acme", "x", now)
			return err
		}
		if err := d.Tx(ctx, insert); err != nil {
			t.Fatal(err)
		}
		dup := d.Tx(ctx, insert)
		if got := ctalk.ErrorCode(dup); got != ctalk.EConflict || !db.IsDuplicate(dup) {
			t.Errorf("duplicate insert: code %q (duplicate %v), want %q", got, db.IsDuplicate(dup), ctalk.EConflict)
		}
		if db.IsDuplicate(ctalk.Errorf(ctalk.EConflict, "explained")) {
			t.Error("a service's own conflict reads as a duplicate row")
		}
		err := d.Tx(ctx, func(tx db.Querier) error {
			_, err := tx.Exec(ctx, `INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)`, "nope", "u", "U", "x", "member", now)
			return err
		})
		if got := ctalk.ErrorCode(err); got != ctalk.ENotFound {
			t.Errorf("foreign key violation: code %q, want %q (err %v)", got, ctalk.ENotFound, err)
		}
	})
}

func TestTimesRoundTripAndCompare(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		// Fractions of different lengths must still compare in time order.
		times := []time.Time{base, base.Add(123456 * time.Microsecond), base.Add(500 * time.Millisecond), base.Add(time.Second)}
		for i, ts := range times {
			if _, err := dbtest.Exec(d, `INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ($1, 'n', 'x', $2)`, "o"+string(rune('a'+i)), ts); err != nil {
				t.Fatal(err)
			}
		}
		var n int
		if err := d.QueryRow(ctx, `SELECT COUNT(*) FROM orgs WHERE created_at > $1`, times[1]).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Errorf("rows after %v: %d, want 2", times[1], n)
		}
		var got time.Time
		if err := d.QueryRow(ctx, `SELECT created_at FROM orgs WHERE id = 'ob'`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if !got.Equal(times[1]) {
			t.Errorf("round trip: %v, want %v", got, times[1])
		}
	})
}

func TestConnectUnreachablePostgres(t *testing.T) {
	_, err := db.Connect(context.Background(), db.Config{URL: "postgres://ctalk:secret@127.0.0.1:1/none?connect_timeout=2"})
	if err == nil {
		t.Fatal("connect to a closed port succeeded")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error reveals the password: %v", err)
	}
	if !strings.Contains(err.Error(), "cannot reach the postgres database") {
		t.Errorf("error %q does not say the database cannot be reached", err)
	}
}
