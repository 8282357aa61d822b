package db_test

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestFirstMigrationRefusesOtherTables holds that ctalk does not create its
// tables silently beside another application's: a schema with a table of
// its own is refused before anything is created, with the way out named,
// and DATABASE_ALLOW_OTHER_TABLES lets it through.
func TestFirstMigrationRefusesOtherTables(t *testing.T) {
	u := dbtest.PostgresURL(t)
	raw, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`CREATE TABLE invoices (id int)`); err != nil {
		t.Fatal(err)
	}

	_, err = db.Open(context.Background(), db.Config{URL: u})
	if err == nil {
		t.Fatal("migrated into a schema holding another application's table")
	}
	for _, want := range []string{"invoices", "DATABASE_ALLOW_OTHER_TABLES", "CREATE DATABASE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("the refused start left %d tables in the schema, want only the other application's", n)
	}

	var logs bytes.Buffer
	d, err := db.Open(context.Background(), db.Config{URL: u, AllowOtherTables: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("with AllowOtherTables: %v", err)
	}
	d.Close()
	if !strings.Contains(logs.String(), "DATABASE_ALLOW_OTHER_TABLES") {
		t.Errorf("the allowed migration was not logged: %q", logs.String())
	}
	// Once migrated, the schema is ctalk's: a restart does not ask again.
	d, err = db.Open(context.Background(), db.Config{URL: u})
	if err != nil {
		t.Fatalf("restart after the allowed migration: %v", err)
	}
	d.Close()
}

// TestMissingDatabaseSaysHowToCreateIt holds that a DATABASE_URL naming a
// database the server does not have stops the start with the command that
// creates it.
func TestMissingDatabaseSaysHowToCreateIt(t *testing.T) {
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		t.Skip("skipping Postgres: TEST_DATABASE_URL is not set (.ci/run sets it; see README)")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/ctalk_no_such_database"
	_, err = db.Connect(context.Background(), db.Config{URL: u.String()})
	if err == nil {
		t.Fatal("connected to a database that does not exist")
	}
	for _, want := range []string{`"ctalk_no_such_database" does not exist`, "createdb", "CREATE DATABASE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
}
