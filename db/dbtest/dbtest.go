// Package dbtest runs a test once per database engine: SQLite always, and
// Postgres when TEST_DATABASE_URL is set, each on a fresh, migrated database
// (a schema of its own on Postgres, migrated once and emptied for each test;
// see pgpool.go). CTALK_TEST_ENGINES narrows the engines (see Engines).
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/ctalk/ctalk/db"
)

// Engines lists the engines every storage test runs on: both, or the ones
// CTALK_TEST_ENGINES names ("sqlite", "postgres", or both, comma-separated).
// A test asking Open for an engine left out is skipped, saying so. CI runs
// the suite twice this way: under the race detector on Postgres, and
// without it on SQLite, whose engine is C translated to Go and costs
// several times more under the detector than everything else together
// (.ci/run says why that split and BENCHMARKS.md, "CI time", what it saves).
var Engines = enginesFromEnv(os.Getenv("CTALK_TEST_ENGINES"))

// enginesFromEnv parses CTALK_TEST_ENGINES; an empty value is both engines.
// It panics on a name it does not know: a misspelt value would otherwise
// run nothing and pass.
func enginesFromEnv(v string) []db.Engine {
	if strings.TrimSpace(v) == "" {
		return []db.Engine{db.SQLite, db.Postgres}
	}
	var es []db.Engine
	for _, name := range strings.Split(v, ",") {
		switch e := db.Engine(strings.ToLower(strings.TrimSpace(name))); e {
		case db.SQLite, db.Postgres:
			if !slices.Contains(es, e) {
				es = append(es, e)
			}
		default:
			panic(fmt.Sprintf("CTALK_TEST_ENGINES=%q: %q is not an engine; name sqlite, postgres or both, comma-separated", v, name))
		}
	}
	return es
}

// skipUnlessEngine skips the test when CTALK_TEST_ENGINES leaves e out.
func skipUnlessEngine(t testing.TB, e db.Engine) {
	t.Helper()
	if !slices.Contains(Engines, e) {
		t.Skipf("skipping %s: CTALK_TEST_ENGINES=%s leaves it out", e, os.Getenv("CTALK_TEST_ENGINES"))
	}
}

// Run runs fn as one subtest per engine, each with its own empty database.
func Run(t *testing.T, fn func(t *testing.T, d *db.DB)) {
	t.Helper()
	for _, e := range Engines {
		t.Run(string(e), func(t *testing.T) {
			fn(t, Open(t, e))
		})
	}
}

// Open returns a fresh, migrated database of the given engine, closed when
// the test ends: on SQLite a copy of a template migrated once (see
// template.go), on Postgres a schema of the pool emptied since its last test
// (see pgpool.go). On Postgres without TEST_DATABASE_URL the test is skipped.
func Open(t testing.TB, e db.Engine) *db.DB {
	t.Helper()
	return open(t, e, RLS)
}

// OpenRLS is Open with, on Postgres, row-level security binding the
// database's statements (they run as AppRole) whatever RLS says.
func OpenRLS(t testing.TB, e db.Engine) *db.DB {
	t.Helper()
	return open(t, e, true)
}

func open(t testing.TB, e db.Engine, rls bool) *db.DB {
	t.Helper()
	skipUnlessEngine(t, e)
	var cfg db.Config
	if e == db.SQLite {
		cfg = copySQLite(t)
	} else {
		cfg = pooledPostgres(t, rls)
	}
	d, err := db.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open %s: %v", e, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// Config returns the configuration of a fresh, empty database of the given
// engine: a new SQLite file, or a new Postgres schema dropped at cleanup.
// Two servers opened on the same Config share one database.
func Config(t testing.TB, e db.Engine) db.Config {
	t.Helper()
	skipUnlessEngine(t, e)
	if e == db.SQLite {
		return db.Config{Path: filepath.Join(t.TempDir(), "ctalk.db")}
	}
	return db.Config{URL: PostgresURL(t), Role: testRole(t)}
}

// PostgresURL creates an empty schema on the TEST_DATABASE_URL server and
// returns a URL whose search_path points at it. It skips the test, saying
// why, when TEST_DATABASE_URL is unset.
func PostgresURL(t testing.TB) string {
	t.Helper()
	skipUnlessEngine(t, db.Postgres)
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		t.Skip("skipping Postgres: TEST_DATABASE_URL is not set (.ci/run sets it; see README)")
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "ctalk_test_" + hex.EncodeToString(b[:])

	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("TEST_DATABASE_URL: %v", err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema on TEST_DATABASE_URL: %v", err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer admin.Close()
		admin.Exec("DROP SCHEMA " + schema + " CASCADE")
	})

	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("TEST_DATABASE_URL is not a URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Exec runs a statement that sets up or alters a test's data, as the one
// writer of a SQLite database (see db.DB.Write), in the operator's scope.
func Exec(d *db.DB, query string, args ...any) (res sql.Result, err error) {
	err = d.Write(opCtx, func(q db.Querier) error {
		res, err = q.Exec(opCtx, query, args...)
		return err
	})
	return res, err
}

// ExecAsOwner runs a statement that needs the tables' owner (altering the
// schema, ending another connection): on Postgres over a connection of
// its own to d's URL, whose user owns the tables while d's statements may
// run as a role that owns nothing (see RLS), granting that role the
// tables afterwards as the server's start does; on SQLite as Exec does.
func ExecAsOwner(t testing.TB, d *db.DB, query string, args ...any) {
	t.Helper()
	if d.Engine != db.Postgres {
		if _, err := Exec(d, query, args...); err != nil {
			t.Fatal(err)
		}
		return
	}
	owner, err := sql.Open("pgx", d.DirectURL)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if _, err := owner.Exec(query, args...); err != nil {
		t.Fatal(err)
	}
	if RLS {
		if _, err := owner.Exec(`GRANT SELECT, INSERT, UPDATE, DELETE, REFERENCES ON ALL TABLES IN SCHEMA ` + `"` + strings.ReplaceAll(schemaOf(t, owner), `"`, `""`) + `" TO ` + AppRole); err != nil {
			t.Fatal(err)
		}
	}
}

// schemaOf returns the current schema of q.
func schemaOf(t testing.TB, q *sql.DB) string {
	t.Helper()
	var s string
	if err := q.QueryRow(`SELECT current_schema()`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Statements returns how many statements d runs while fn runs.
func Statements(d *db.DB, fn func()) int64 {
	var n atomic.Int64
	d.OnStatement(func(string) { n.Add(1) })
	defer d.OnStatement(nil)
	fn()
	return n.Load()
}

// Tables returns the names of the tables of d's database (of its schema on
// Postgres), without SQLite's own.
func Tables(t testing.TB, d *db.DB) []string {
	t.Helper()
	q := `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`
	if d.Engine == db.Postgres {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`
	}
	rows, err := d.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// Values scans the row rows is on into one value per column, whatever the
// columns are; text read as bytes is returned as a string.
func Values(rows *db.Rows) ([]any, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	for i, v := range vals {
		if bs, ok := v.([]byte); ok {
			vals[i] = string(bs)
		}
	}
	return vals, nil
}

// Plan returns the engine's plan of query, a line per row: SQLite's EXPLAIN
// QUERY PLAN, or Postgres's EXPLAIN with sequential scans priced out, so
// that a test's nearly empty table still shows the index a query can use.
func Plan(t testing.TB, d *db.DB, query string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	var lines []string
	err := d.Tx(ctx, func(tx db.Querier) error {
		explain := "EXPLAIN QUERY PLAN "
		if d.Engine == db.Postgres {
			explain = "EXPLAIN "
			if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, explain+query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			vals, err := Values(rows)
			if err != nil {
				return err
			}
			lines = append(lines, strings.TrimSpace(fmt.Sprintln(vals...)))
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatalf("plan of %s: %v", query, err)
	}
	return strings.Join(lines, "\n")
}
