package db_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// openAsAppRole opens a fresh Postgres database whose statements run as
// dbtest.AppRole, which row-level security binds, whatever CTALK_TEST_RLS
// says.
func openAsAppRole(t *testing.T) *db.DB {
	t.Helper()
	cfg := dbtest.Config(t, db.Postgres)
	cfg.Role = dbtest.AppRoleOn(t)
	d, err := db.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if !d.RLS() {
		t.Fatal("RLS() is false for a role that owns nothing")
	}
	return d
}

// seedTwoOrgs makes the orgs a and b, a with two glossary terms and b
// with one, as the operator.
func seedTwoOrgs(t *testing.T, d *db.DB) {
	t.Helper()
	for _, stmt := range []string{
		`INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ('a', 'A', '', $1), ('b', 'B', '', $1)`,
		`INSERT INTO knowledge_glossary (org_id, term, means, updated_by, updated_at) VALUES ('a', 'k8s', 'kubernetes', 'x', $1), ('a', 'pr', 'pull request', 'x', $1), ('b', 'db', 'database', 'x', $1)`,
	} {
		if _, err := dbtest.Exec(d, stmt, d.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRowLevelSecurityScopesEveryStatement checks that on Postgres, with
// statements run as a role that owns nothing, a statement that forgets its
// org filter sees only the rows of its context's org, sees none without a
// scope, and sees every org's in the operator's scope: through each way of
// running a statement. Without migration 0051's policies every count
// below would be the total.
func TestRowLevelSecurityScopesEveryStatement(t *testing.T) {
	d := openAsAppRole(t)
	seedTwoOrgs(t, d)
	bg := context.Background()
	// count runs the statement with no org filter each way.
	ways := map[string]func(ctx context.Context, query string) (int, error){
		"QueryRow": func(ctx context.Context, query string) (n int, err error) {
			return n, d.QueryRow(ctx, query).Scan(&n)
		},
		"Query": func(ctx context.Context, query string) (n int, err error) {
			err = db.Each(ctx, d, func(r *db.Rows) error { return r.Scan(&n) }, query)
			return n, err
		},
		"Tx": func(ctx context.Context, query string) (n int, err error) {
			return n, d.Tx(ctx, func(q db.Querier) error { return q.QueryRow(ctx, query).Scan(&n) })
		},
		"Write": func(ctx context.Context, query string) (n int, err error) {
			return n, d.Write(ctx, func(q db.Querier) error { return q.QueryRow(ctx, query).Scan(&n) })
		},
		"QueryRow planned each run": func(ctx context.Context, query string) (n int, err error) {
			return n, d.QueryRow(ctx, query, d.PlanEachRun()...).Scan(&n)
		},
		"Query planned each run": func(ctx context.Context, query string) (n int, err error) {
			err = db.Each(ctx, d, func(r *db.Rows) error { return r.Scan(&n) }, query, d.PlanEachRun()...)
			return n, err
		},
		"RunLocked": func(ctx context.Context, query string) (n int, err error) {
			return n, d.QueryRowLocked(ctx, []int64{db.LockID("rls test")}, query, nil, &n)
		},
	}
	scopes := []struct {
		name              string
		ctx               context.Context
		glossary, orgRows int
	}{
		{"org a", ctalk.WithOrg(bg, "a"), 2, 1},
		{"org b", ctalk.WithOrg(bg, "b"), 1, 1},
		{"no scope", bg, 0, 0},
		{"an org that does not exist", ctalk.WithOrg(bg, "c"), 0, 0},
		{"the operator", ctalk.AsOperator(bg, "test"), 3, 2},
		{"org a within the operator's", ctalk.WithOrg(ctalk.AsOperator(bg, "test"), "a"), 2, 1},
	}
	for way, count := range ways {
		for _, s := range scopes {
			t.Run(way+"/"+s.name, func(t *testing.T) {
				if got, err := count(s.ctx, `SELECT count(*) FROM knowledge_glossary`); err != nil || got != s.glossary {
					t.Errorf("glossary rows seen: %d, %v; want %d", got, err, s.glossary)
				}
				if got, err := count(s.ctx, `SELECT count(*) FROM orgs`); err != nil || got != s.orgRows {
					t.Errorf("orgs seen: %d, %v; want %d", got, err, s.orgRows)
				}
			})
		}
	}
}

// TestRowLevelSecurityRefusesAnotherOrgsRows checks that a statement in
// org a's scope can neither write a row of org b nor change or delete one.
func TestRowLevelSecurityRefusesAnotherOrgsRows(t *testing.T) {
	d := openAsAppRole(t)
	seedTwoOrgs(t, d)
	ctx := ctalk.WithOrg(context.Background(), "a")
	insertB := `INSERT INTO knowledge_glossary (org_id, term, means, updated_by, updated_at) VALUES ('b', 'ci', 'continuous integration', 'x', $1)`
	for name, write := range map[string]func() error{
		"Write": func() error {
			return d.Write(ctx, func(q db.Querier) error { _, err := q.Exec(ctx, insertB, d.Now()); return err })
		},
		"Tx": func() error {
			return d.Tx(ctx, func(q db.Querier) error { _, err := q.Exec(ctx, insertB, d.Now()); return err })
		},
		"moving a's row to b": func() error {
			return d.Tx(ctx, func(q db.Querier) error {
				_, err := q.Exec(ctx, `UPDATE knowledge_glossary SET org_id = 'b' WHERE term = 'k8s'`)
				return err
			})
		},
	} {
		t.Run(name, func(t *testing.T) {
			var pe *pgconn.PgError
			if err := write(); !errors.As(err, &pe) || pe.Code != "42501" {
				t.Errorf("got %v, want the policy's refusal (42501)", err)
			}
		})
	}
	t.Run("changing and deleting b's rows", func(t *testing.T) {
		err := d.Tx(ctx, func(q db.Querier) error {
			for _, stmt := range []string{
				`UPDATE knowledge_glossary SET means = 'changed'`,
				`DELETE FROM knowledge_glossary WHERE org_id = 'b'`,
			} {
				res, err := q.Exec(ctx, stmt)
				if err != nil {
					return err
				}
				if n, _ := res.RowsAffected(); strings.HasPrefix(stmt, "DELETE") && n != 0 {
					t.Errorf("%s: %d rows, want none", stmt, n)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var means string
		if err := d.QueryRow(ctalk.WithOrg(context.Background(), "b"), `SELECT means FROM knowledge_glossary WHERE term = 'db'`).Scan(&means); err != nil || means != "database" {
			t.Errorf("b's row after a's statements: %q, %v; want it unchanged", means, err)
		}
	})
}

// TestRowLevelSecurityDoesNotOutliveItsStatement checks that a scope
// ends with its statement's transaction: on the one connection of the
// pool, a statement without a scope after one in org a's sees nothing.
func TestRowLevelSecurityDoesNotOutliveItsStatement(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	cfg.Role, cfg.MaxOpenConns = dbtest.AppRoleOn(t), 1
	d, err := db.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	seedTwoOrgs(t, d)
	var n int
	if err := d.QueryRow(ctalk.WithOrg(context.Background(), "a"), `SELECT count(*) FROM knowledge_glossary`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("in a's scope: %d, %v", n, err)
	}
	var user string
	if err := d.QueryRow(context.Background(), `SELECT count(*), current_user FROM knowledge_glossary`).Scan(&n, &user); err != nil || n != 0 || user != dbtest.AppRole {
		t.Errorf("next statement without a scope: %d rows as %s, %v; want 0 as %s", n, user, err, dbtest.AppRole)
	}
	if err := d.QueryRow(ctalk.WithOrg(context.Background(), "a"), `SELECT 1 FROM knowledge_glossary WHERE org_id = 'b'`).Scan(&n); !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("a missing row: %v, want sql.ErrNoRows", err)
	}
}

// TestEveryOrgTableHasItsPolicy checks that every table holding an org's
// rows (OrgTables: each with an org_id column), and orgs itself, has
// row-level security on with a policy, so that a table added later without
// its policy fails here.
func TestEveryOrgTableHasItsPolicy(t *testing.T) {
	d := dbtest.Open(t, db.Postgres)
	ctx := dbtest.Operator()
	tables, err := d.OrgTables(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < 40 {
		t.Fatalf("only %d org tables found: %v", len(tables), tables)
	}
	for _, table := range append(tables, "orgs", "oauth_tokens") {
		var on, forced bool
		var policies int
		err := d.QueryRow(ctx, `SELECT c.relrowsecurity, c.relforcerowsecurity, (SELECT count(*) FROM pg_policies p WHERE p.schemaname = current_schema() AND p.tablename = c.relname)
			FROM pg_class c WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`, table).Scan(&on, &forced, &policies)
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if !on || !forced || policies == 0 {
			t.Errorf("%s: row-level security on %v, forced %v, %d policies; a table with an org's rows needs all three (see migrations 0051 and 0054)", table, on, forced, policies)
		}
	}
}

// TestRLSReported checks what Open says of row-level security: not in
// force for the superuser that owns the tables, nor on SQLite, and a
// DATABASE_ROLE that would bypass it refused at start.
func TestRLSReported(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		if d := dbtest.Open(t, db.SQLite); d.RLS() {
			t.Error("RLS() is true on SQLite")
		}
	})
	t.Run("the owner", func(t *testing.T) {
		var logs bytes.Buffer
		cfg := dbtest.Config(t, db.Postgres)
		cfg.Role, cfg.Logger = "", slog.New(slog.NewTextHandler(&logs, nil))
		d, err := db.Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if d.RLS() {
			t.Error("RLS() is true for a superuser")
		}
		if !strings.Contains(logs.String(), "row-level security is not in force") {
			t.Errorf("the log does not say row-level security is not in force:\n%s", logs.String())
		}
	})
	t.Run("an owner that is no superuser", func(t *testing.T) {
		// The owner of a hosted database: it migrates, and the policies
		// bind it (FORCE, migration 0054), so every statement carries its
		// scope and one that forgets its org filter sees its org's rows.
		cfg := dbtest.Config(t, db.Postgres)
		cfg.Role, cfg.URL = "", ownerURL(t, cfg.URL)
		d, err := db.Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if !d.RLS() {
			t.Fatal("RLS() is false for an owner that is no superuser")
		}
		seedTwoOrgs(t, d)
		for ctx, want := range map[context.Context]int{context.Background(): 0, ctalk.WithOrg(context.Background(), "a"): 2, dbtest.Operator(): 3} {
			var n int
			if err := d.QueryRow(ctx, `SELECT count(*) FROM knowledge_glossary`).Scan(&n); err != nil || n != want {
				t.Errorf("the owner's count in scope %v: %d, %v; want %d", ctx, n, err, want)
			}
		}
		// A migration that rewrites rows, as the owner, rewrites every
		// org's: its session is the operator's.
		if _, err := d.MigrateDown(1); err != nil {
			t.Fatal(err)
		}
		if err := d.MigrateUp(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a role that bypasses it", func(t *testing.T) {
		cfg := dbtest.Config(t, db.Postgres)
		cfg.Role = "postgres"
		d, err := db.Open(context.Background(), cfg)
		if err == nil {
			d.Close()
			t.Fatal("opened with a superuser as DATABASE_ROLE")
		}
		if !strings.Contains(err.Error(), "bypasses row-level security") {
			t.Errorf("error %q does not say why", err)
		}
	})
}

// ownerURL returns schemaURL with the user ctalk_test_owner, which logs in,
// is no superuser and cannot bypass row-level security, made the owner of
// the URL's schema (so that it migrates it, as a hosted database's user
// does).
func ownerURL(t *testing.T, schemaURL string) string {
	t.Helper()
	admin, err := sql.Open("pgx", schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const role = "ctalk_test_owner"
	_, err = admin.Exec(`CREATE ROLE ` + role + ` LOGIN NOSUPERUSER NOBYPASSRLS`)
	var pe *pgconn.PgError
	if err != nil && !(errors.As(err, &pe) && (pe.Code == "42710" || pe.Code == "23505")) {
		t.Fatal(err)
	}
	var schema string
	if err := admin.QueryRow(`SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(`ALTER SCHEMA "` + schema + `" OWNER TO ` + role); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}

// TestRowLevelSecurityScopeIsData checks that an org id is a value to the
// database, never statement text, in each way a scope is sent: ids
// with quotes and backslashes see nothing and break nothing.
func TestRowLevelSecurityScopeIsData(t *testing.T) {
	d := openAsAppRole(t)
	seedTwoOrgs(t, d)
	for _, org := range []string{`a' OR true --`, `a\' OR true --`, `'), set_config('ctalk.scope', 'operator', true) --`} {
		ctx := ctalk.WithOrg(context.Background(), org)
		var n int
		if err := d.QueryRow(ctx, `SELECT count(*) FROM knowledge_glossary`).Scan(&n); err != nil || n != 0 {
			t.Errorf("read scoped to %q: %d rows, %v; want none", org, n, err)
		}
		err := d.Tx(ctx, func(q db.Querier) error { return q.QueryRow(ctx, `SELECT count(*) FROM knowledge_glossary`).Scan(&n) })
		if err != nil || n != 0 {
			t.Errorf("transaction scoped to %q: %d rows, %v; want none", org, n, err)
		}
	}
}

// TestScopedTxRollsBackAFailedStatement checks that a transaction one of
// whose statements failed is not reported committed, even when fn went on
// past the error.
func TestScopedTxRollsBackAFailedStatement(t *testing.T) {
	d := openAsAppRole(t)
	seedTwoOrgs(t, d)
	ctx := ctalk.WithOrg(context.Background(), "a")
	err := d.Tx(ctx, func(q db.Querier) error {
		q.Exec(ctx, `DELETE FROM knowledge_glossary WHERE term = 'k8s'`)
		q.Exec(ctx, `INSERT INTO knowledge_glossary (org_id, term, means, updated_by, updated_at) VALUES ('b', 'x', 'y', 'x', now())`)
		return nil
	})
	if err == nil {
		t.Error("a transaction with a refused statement committed")
	}
	var n int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM knowledge_glossary`).Scan(&n); err != nil || n != 2 {
		t.Errorf("a's terms after the rollback: %d, %v; want 2", n, err)
	}
}
