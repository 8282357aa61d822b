package dbtest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/ctalk/ctalk/db"
)

// schema returns every table, index and trigger of a SQLite database with
// its SQL, and the migration version.
func schema(t *testing.T, d *db.DB) []string {
	t.Helper()
	rows, err := d.Query(context.Background(), `SELECT type || ' ' || name || ': ' || COALESCE(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	v, dirty, err := d.MigrationVersion()
	if err != nil {
		t.Fatal(err)
	}
	return append(out, fmt.Sprintf("version %d, dirty %v", v, dirty))
}

// TestOpenCopiesAMigratedDatabase: the copy Open gives a test is the
// database that migrating a new one leaves, and each test's copy is its own.
func TestOpenCopiesAMigratedDatabase(t *testing.T) {
	t.Parallel()
	migrated, err := db.Open(context.Background(), Config(t, db.SQLite))
	if err != nil {
		t.Fatal(err)
	}
	defer migrated.Close()
	want := schema(t, migrated)
	a, b := Open(t, db.SQLite), Open(t, db.SQLite)
	if got := schema(t, a); !slices.Equal(got, want) {
		t.Fatalf("the copied database differs from a migrated one:\ngot  %q\nwant %q", got, want)
	}
	if _, err := Exec(a, `CREATE TABLE only_in_a (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	if got := schema(t, b); !slices.Equal(got, want) {
		t.Fatalf("a change to one test's copy reached another's:\n%q", got)
	}
}
