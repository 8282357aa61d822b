package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ctalk/ctalk/db"
)

// On Postgres, migrating a fresh schema is most of what a storage test
// costs: its DDL, a commit per migration step, half a second to several
// seconds when other tests share the server. So Open hands each test a
// schema this test process migrated once and emptied since: when the test
// ends, every table of its schema is emptied (sequences restarted), and
// the schema, found to hold the migrated tables and columns and nothing
// else, waits for the next test. A test that changed its schema's tables
// has the schema dropped instead.
//
// A process's schemas outlive it (a test binary has no hook at its exit),
// so each is named ctalk_pool_* and held, while its process lives, by a
// session advisory lock of that process's keeper connection; the first
// Open of a process drops every pool schema whose lock is free, that is,
// whose process has ended. Config still returns an empty schema, for the
// tests that migrate themselves.

const poolPrefix = "ctalk_pool_"

// pgPool is this process's pool of migrated schemas on TEST_DATABASE_URL.
var pgPool struct {
	once   sync.Once
	err    error
	base   string
	admin  *sql.DB
	keeper *sql.Conn // holds the advisory lock of every schema of this process

	mu    sync.Mutex
	owned map[string]bool // the schemas this process made and holds
	free  []string
	shape string // the fingerprint of a migrated schema, from the first
	// tables are the tables of a schema of that shape, which empty
	// deletes from, but schema_migrations.
	tables []string
}

// startPool connects the keeper and drops the pool schemas of processes
// that have ended.
func startPool(base string) error {
	ctx := context.Background()
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return fmt.Errorf("TEST_DATABASE_URL: %w", err)
	}
	keeper, err := admin.Conn(ctx)
	if err != nil {
		admin.Close()
		return fmt.Errorf("connect to TEST_DATABASE_URL: %w", err)
	}
	pgPool.base, pgPool.admin, pgPool.keeper, pgPool.owned = base, admin, keeper, map[string]bool{}
	names, err := column(ctx, keeper, `SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)`, poolPrefix)
	if err != nil {
		return fmt.Errorf("list the pool's schemas: %w", err)
	}
	for _, n := range names {
		var mine bool
		if err := keeper.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(hashtext($1))`, n).Scan(&mine); err != nil {
			return fmt.Errorf("lock a pool schema: %w", err)
		}
		if !mine {
			continue // another test process's, alive
		}
		if _, err := keeper.ExecContext(ctx, `DROP SCHEMA IF EXISTS `+n+` CASCADE`); err != nil {
			return fmt.Errorf("drop the pool schema %s of an ended test process: %w", n, err)
		}
		keeper.ExecContext(ctx, `SELECT pg_advisory_unlock(hashtext($1))`, n)
	}
	return nil
}

// pooledPostgres returns the configuration of a migrated, empty schema of
// the pool, emptied again and kept for the next test when t ends.
func pooledPostgres(t testing.TB, rls bool) db.Config {
	t.Helper()
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		t.Skip("skipping Postgres: TEST_DATABASE_URL is not set (.ci/run sets it; see README)")
	}
	pgPool.once.Do(func() { pgPool.err = startPool(base) })
	if pgPool.err != nil {
		t.Fatalf("dbtest: %v", pgPool.err)
	}
	if base != pgPool.base {
		t.Fatalf("dbtest: TEST_DATABASE_URL changed while the tests ran")
	}
	name, err := takeSchema()
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	// Registered before Open's Close, so it runs after it, once the
	// test's servers and pools are gone.
	t.Cleanup(func() { giveBack(name) })
	role := ""
	if rls {
		role = AppRoleOn(t)
		// A test's own tables (a table added later, in the tests of
		// deletion) are made as the role its statements run as.
		if _, err := pgPool.admin.Exec("GRANT CREATE ON SCHEMA " + name + " TO " + role); err != nil {
			t.Fatalf("dbtest: %v", err)
		}
	}
	// What Open logs of the pooled schema (row-level security's state at
	// every test) says nothing a test needs.
	return db.Config{URL: schemaURL(base, name), Role: role, Logger: slog.New(slog.DiscardHandler)}
}

// takeSchema returns a free schema of the pool, or a new one, migrated.
func takeSchema() (string, error) {
	pgPool.mu.Lock()
	if n := len(pgPool.free); n > 0 {
		name := pgPool.free[n-1]
		pgPool.free = pgPool.free[:n-1]
		pgPool.mu.Unlock()
		return name, nil
	}
	pgPool.mu.Unlock()
	var b [6]byte
	rand.Read(b[:])
	name := poolPrefix + hex.EncodeToString(b[:])
	ctx := context.Background()
	if err := keep(ctx, name); err != nil {
		return "", err
	}
	if _, err := pgPool.admin.ExecContext(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", fmt.Errorf("create schema on TEST_DATABASE_URL: %w", err)
	}
	d, err := db.Open(ctx, db.Config{URL: schemaURL(pgPool.base, name), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return "", fmt.Errorf("migrate a pool schema: %w", err)
	}
	d.Close()
	shape, err := schemaShape(ctx, pgPool.admin, name)
	if err != nil {
		return "", err
	}
	// Every schema of the same shape has the same tables.
	tables, err := column(ctx, pgPool.admin, `SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename <> 'schema_migrations' ORDER BY tablename`, name)
	if err != nil {
		return "", err
	}
	pgPool.mu.Lock()
	if pgPool.shape == "" {
		pgPool.shape, pgPool.tables = shape, tables
	}
	pgPool.mu.Unlock()
	return name, nil
}

// keep takes the advisory lock that says name belongs to this process. A
// keeper connection lost (a test restarted the server) is replaced, and
// takes again the locks of the schemas this process holds.
func keep(ctx context.Context, name string) error {
	pgPool.mu.Lock()
	defer pgPool.mu.Unlock()
	lock := func() error {
		_, err := pgPool.keeper.ExecContext(ctx, `SELECT pg_advisory_lock(hashtext($1))`, name)
		return err
	}
	err := lock()
	if err != nil {
		err = reconnectKeeper(ctx)
		if err == nil {
			err = lock()
		}
	}
	if err != nil {
		return fmt.Errorf("lock a pool schema: %w", err)
	}
	pgPool.owned[name] = true
	return nil
}

// reconnectKeeper replaces the keeper connection and locks again every
// schema this process holds. pgPool.mu is held.
func reconnectKeeper(ctx context.Context) error {
	pgPool.keeper.Close()
	keeper, err := pgPool.admin.Conn(ctx)
	if err != nil {
		return err
	}
	pgPool.keeper = keeper
	for n := range pgPool.owned {
		if _, err := keeper.ExecContext(ctx, `SELECT pg_advisory_lock(hashtext($1))`, n); err != nil {
			return err
		}
	}
	return nil
}

// giveBack empties name for the next test, or drops it when the test left
// it changed or it cannot be emptied.
func giveBack(name string) {
	ctx := context.Background()
	if err := empty(ctx, name); err == nil {
		pgPool.mu.Lock()
		pgPool.free = append(pgPool.free, name)
		pgPool.mu.Unlock()
		return
	}
	pgPool.admin.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+name+" CASCADE")
	pgPool.mu.Lock()
	delete(pgPool.owned, name)
	pgPool.keeper.ExecContext(ctx, `SELECT pg_advisory_unlock(hashtext($1))`, name)
	pgPool.mu.Unlock()
}

// errChanged is a schema whose tables a test changed.
var errChanged = errors.New("the test changed its schema's tables")

// empty deletes the rows of every table of name but the migrations' own,
// restarting its sequences, after checking that it still has the migrated shape.
func empty(ctx context.Context, name string) error {
	shape, err := schemaShape(ctx, pgPool.admin, name)
	if err != nil {
		return err
	}
	pgPool.mu.Lock()
	want, tables := pgPool.shape, pgPool.tables
	pgPool.mu.Unlock()
	if shape != want {
		return errChanged
	}
	// Deleting the few rows a test wrote costs a fraction of a truncate,
	// which gives every table and index a new file. Foreign keys are not
	// checked meanwhile (session_replication_role, a superuser's), as
	// every table is emptied; a role that may not is given new schemas.
	var b strings.Builder
	b.WriteString("SET LOCAL lock_timeout = '5s'; SET LOCAL session_replication_role = replica;")
	for _, t := range tables {
		fmt.Fprintf(&b, " DELETE FROM %s.%s;", name, t)
	}
	b.WriteString(" SELECT setval(s.oid, 1, false) FROM pg_class s WHERE s.relkind = 'S' AND s.relnamespace = '" + name + "'::regnamespace;")
	tx, err := pgPool.admin.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	// A connection the test left behind holding a lock would stall the
	// deletes; such a schema is dropped rather than waited for.
	if _, err := tx.ExecContext(ctx, b.String()); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// schemaShape fingerprints the tables, columns, indexes and functions of
// schema name.
func schemaShape(ctx context.Context, q *sql.DB, name string) (string, error) {
	var shape string
	err := q.QueryRowContext(ctx, `
SELECT md5(COALESCE(string_agg(c.relname || ' ' || c.relkind::text || ' ' || COALESCE(a.attname || ' ' || a.atttypid::text || ' ' || a.attnotnull::text, ''), ',' ORDER BY c.relname, a.attnum), ''))
     || ' ' || (SELECT count(*) FROM pg_proc p WHERE p.pronamespace = n.oid)
  FROM pg_namespace n
  JOIN pg_class c ON c.relnamespace = n.oid
  LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE n.nspname = $1
 GROUP BY n.oid`, name).Scan(&shape)
	if err != nil {
		return "", fmt.Errorf("read the shape of schema %s: %w", name, err)
	}
	return shape, nil
}

// schemaURL is base with its search_path set to schema, and commits that
// do not wait for the log's flush to disk (synchronous_commit off, as a
// runtime parameter of each connection): a test's database is thrown away,
// and waiting on the disk at each commit (5 ms on the 2-core machine CI
// runs on, against 2 without) adds up in the tests that write step by
// step. What a commit
// makes visible, and when, is the same either way; only a crash of the
// server could lose the last commits, which the fault tests, on databases
// of their own (Config), still test.
func schemaURL(base, schema string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("synchronous_commit", "off")
	u.RawQuery = q.Encode()
	return u.String()
}

// column returns the one text column of query's rows.
func column(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
