package db

import (
	"os"
	"testing"
)

// TestMigrationsRunAsOperator checks that the migrations' session is in
// the operator's scope, which the policies of 0051 let see and write every
// organization's rows: row-level security binds the tables' owner, who
// migrates (0054), and a migration that rewrote rows in no scope would
// rewrite none.
func TestMigrationsRunAsOperator(t *testing.T) {
	u := os.Getenv("TEST_DATABASE_URL")
	if u == "" {
		t.Skip("skipping Postgres: TEST_DATABASE_URL is not set (.ci/run sets it; see README)")
	}
	d := &DB{Engine: Postgres, DirectURL: u}
	pool, err := d.openSibling()
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var scope string
	if err := pool.QueryRow(`SELECT current_setting('` + settingScope + `', true)`).Scan(&scope); err != nil {
		t.Fatal(err)
	}
	if scope != scopeOperator {
		t.Errorf("the migrations' session has %s = %q, want %q", settingScope, scope, scopeOperator)
	}
}
