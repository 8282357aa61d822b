package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ctalk/ctalk"
)

// AppRole is the Postgres role the tests' servers run their statements as
// when row-level security is on (see RLS): it owns nothing and cannot
// bypass row-level security, as DATABASE_ROLE must in production, while
// the superuser of TEST_DATABASE_URL migrates and owns the tables.
const AppRole = "ctalk_test_app"

// RLS says whether the Postgres databases of Open and Config run their
// statements as AppRole, so that row-level security binds them:
// CTALK_TEST_RLS=1 turns it on.
var RLS = rlsFromEnv(os.Getenv("CTALK_TEST_RLS"))

// rlsFromEnv parses CTALK_TEST_RLS, panicking on a value it does not know
// rather than running without what was asked for.
func rlsFromEnv(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "off", "false":
		return false
	case "1", "on", "true":
		return true
	}
	panic(fmt.Sprintf("CTALK_TEST_RLS=%q: name 1 (on) or 0 (off)", v))
}

// testRole returns the role of a test's Postgres database: AppRole when
// RLS is on, made on the server once, else none.
func testRole(t testing.TB) string {
	t.Helper()
	if !RLS {
		return ""
	}
	return AppRoleOn(t)
}

var appRole struct {
	once sync.Once
	err  error
}

// AppRoleOn makes AppRole on the TEST_DATABASE_URL server when it is
// missing and returns its name, for a test that runs statements as it
// whatever RLS says.
func AppRoleOn(t testing.TB) string {
	t.Helper()
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		t.Skip("skipping Postgres: TEST_DATABASE_URL is not set (.ci/run sets it; see README)")
	}
	appRole.once.Do(func() { appRole.err = makeAppRole(base) })
	if appRole.err != nil {
		t.Fatalf("dbtest: make the role %s: %v", AppRole, appRole.err)
	}
	return AppRole
}

// makeAppRole creates AppRole unless it exists; test processes that race
// to create it find it made.
func makeAppRole(base string) error {
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return err
	}
	defer admin.Close()
	var exists bool
	if err := admin.QueryRow(`SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, AppRole).Scan(&exists); err != nil || exists {
		return err
	}
	_, err = admin.Exec(`CREATE ROLE ` + AppRole + ` NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE`)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42710" || pe.Code == "23505") {
		return nil
	}
	return err
}

// Operator returns a context in the operator's scope, for a test's own
// statements that set up or read rows of any organization.
func Operator() context.Context { return opCtx }

var opCtx = ctalk.AsOperator(context.Background(), "test setup")
