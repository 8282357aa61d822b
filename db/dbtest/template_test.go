package dbtest

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"testing"

	"github.com/ctalk/ctalk/db"
)

// schema returns every table, index and trigger of a SQLite database with
// its SQL, and the migration version.
func schema(t *testing.T, d *db.DB) []string {
	return described(t, d, `SELECT type || ' ' || name || ': ' || COALESCE(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY type, name`)
}

// described returns the rows of query, one text each, and the migration
// version of d.
func described(t *testing.T, d *db.DB, query string) []string {
	t.Helper()
	rows, err := d.Query(context.Background(), query)
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

// postgresSchema returns every column, index and constraint of the
// current schema of a Postgres database, named without the schema, and the
// migration version.
func postgresSchema(t *testing.T, d *db.DB) []string {
	return described(t, d, `
SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || COALESCE(column_default, '')
  FROM information_schema.columns WHERE table_schema = current_schema()
UNION ALL
SELECT 'index ' || indexname || ': ' || replace(indexdef, current_schema() || '.', '')
  FROM pg_indexes WHERE schemaname = current_schema()
UNION ALL
SELECT 'constraint ' || conrelid::regclass::text || ' ' || conname || ': ' || replace(pg_get_constraintdef(oid), current_schema() || '.', '')
  FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
ORDER BY 1`)
}

// TestOpenGivesPostgresAnEmptyMigratedSchema: the pool's schema a test is
// given is the one migrating a new schema leaves, without the rows or the
// sequences' progress of the test before it; a schema whose tables a test
// changed is dropped, not handed out again. Not parallel: the pool is the
// test's alone while it runs.
func TestOpenGivesPostgresAnEmptyMigratedSchema(t *testing.T) {
	migrated, err := db.Open(context.Background(), Config(t, db.Postgres))
	if err != nil {
		t.Fatal(err)
	}
	defer migrated.Close()
	want := postgresSchema(t, migrated)
	if len(want) < 100 {
		t.Fatalf("a migrated schema has only %d columns, indexes and constraints: %q", len(want), want)
	}
	scalar := func(t *testing.T, d *db.DB, q string) (v int64) {
		t.Helper()
		if err := d.QueryRow(context.Background(), q).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return v
	}
	const next = `SELECT nextval(pg_get_serial_sequence('audit_events', 'id'))`
	var first, changed string
	t.Run("writes", func(t *testing.T) {
		d := Open(t, db.Postgres)
		first = d.URL
		if _, err := Exec(d, `INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ('acme', 'Acme', 'x', now())`); err != nil {
			t.Fatal(err)
		}
		scalar(t, d, next)
		scalar(t, d, next)
	})
	t.Run("reuses", func(t *testing.T) {
		d := Open(t, db.Postgres)
		if d.URL != first {
			t.Fatalf("the schema given back was not handed out again: %s, then %s", first, d.URL)
		}
		if got := postgresSchema(t, d); !slices.Equal(got, want) {
			t.Fatalf("the schema given again differs from a migrated one:\ngot  %q\nwant %q", got, want)
		}
		if n := scalar(t, d, `SELECT count(*) FROM orgs`); n != 0 {
			t.Errorf("the schema given again holds %d orgs of the test before", n)
		}
		if n := scalar(t, d, next); n != 1 {
			t.Errorf("the sequence given again starts at %d, not 1", n)
		}
		if _, err := Exec(d, `CREATE TABLE only_here (x INTEGER)`); err != nil {
			t.Fatal(err)
		}
		changed = d.URL
	})
	t.Run("after a change", func(t *testing.T) {
		d := Open(t, db.Postgres)
		if d.URL == changed {
			t.Fatalf("a schema the test before changed was handed out again: %s", d.URL)
		}
		if got := postgresSchema(t, d); !slices.Equal(got, want) {
			t.Fatalf("a new pool schema differs from a migrated one:\ngot  %q\nwant %q", got, want)
		}
	})
	u, _ := url.Parse(changed)
	if n := scalar(t, migrated, `SELECT count(*) FROM pg_namespace WHERE nspname = '`+u.Query().Get("search_path")+`'`); n != 0 {
		t.Errorf("the changed schema %s was not dropped", u.Query().Get("search_path"))
	}
}
