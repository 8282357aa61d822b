package dbtest

import (
	"regexp"
	"slices"
	"testing"

	"github.com/ctalk/ctalk/db"
)

// withoutOrgRows are the tables with neither an org_id column nor a
// foreign key, and why none of their rows is an organization's.
var withoutOrgRows = map[string]string{
	"schema_migrations":    "the schema's version",
	"sqlite_sequence":      "SQLite's counters of AUTOINCREMENT keys",
	"notify_cursors":       "how far the notification worker read the outbox, for all orgs",
	"notify_keys":          "the server's own keys (unsubscribe links, VAPID)",
	"oauth_clients":        "OAuth clients registered with the server, by no org",
	"reset_requests":       "a hash of each account asked for and the client address, kept for the limits' hour",
	"slack_payloads":       "the ids of Slack payloads accepted, kept to accept each once",
	"shared_notifications": "wake-ups between processes on one SQLite file, kept a minute",
	"retired_orgs":         "the operator's record of deleted orgs, kept on purpose",
	"audit_keys":           "the server's secret that audit checkpoints are signed with, for all orgs",
}

// ftsTable is one of SQLite's full-text tables and their shadows, which
// follow their content table by trigger.
var ftsTable = regexp.MustCompile(`_fts(_config|_data|_docsize|_idx)?$`)

// OrgRows returns, for each table of d that holds rows of orgID, how many:
// every table with an org_id column (orgs by its id), read through the
// catalog. A table without org_id must reach one by a foreign key (so
// that its rows go with theirs) or be one known to hold no org's rows;
// any other fails the test, naming it, so that a table added later is
// never forgotten by an org's deletion.
func OrgRows(t testing.TB, d *db.DB, orgID string) map[string]int {
	t.Helper()
	ctx := opCtx
	// Read apart from db.OrgTables, which the deletion follows, so that a
	// table it missed is found here.
	orgSQL := `SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE p.name = 'org_id'`
	if d.Engine == db.Postgres {
		orgSQL = `SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'org_id'`
	}
	withOrg := names(t, d, orgSQL)
	keysSQL := `SELECT DISTINCT m.name FROM sqlite_master m JOIN pragma_foreign_key_list(m.name) f WHERE m.type = 'table'`
	if d.Engine == db.Postgres {
		keysSQL = `SELECT DISTINCT c.relname FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
			WHERE k.contype = 'f' AND k.connamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`
	}
	keyed := names(t, d, keysSQL)
	out := map[string]int{}
	for _, table := range Tables(t, d) {
		col := "org_id"
		switch {
		case table == "orgs":
			col = "id"
		case slices.Contains(withOrg, table):
		case slices.Contains(keyed, table), withoutOrgRows[table] != "", ftsTable.MatchString(table):
			continue
		default:
			t.Errorf("table %s has no org_id column, no foreign key, and is not known to hold no org's rows: give it an org_id, or say why in dbtest's withoutOrgRows", table)
			continue
		}
		var n int
		if err := d.QueryRow(ctx, `SELECT COUNT(*) FROM `+table+` WHERE `+col+` = $1`, orgID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			out[table] = n
		}
	}
	return out
}

// names returns the first column of query's rows.
func names(t testing.TB, d *db.DB, query string, args ...any) []string {
	t.Helper()
	var out []string
	if err := db.Each(opCtx, d, func(r *db.Rows) error {
		var name string
		err := r.Scan(&name)
		out = append(out, name)
		return err
	}, query, args...); err != nil {
		t.Fatal(err)
	}
	return out
}

// UserRows returns, for each table of d with org_id and user_id columns,
// how many rows of the member userID of orgID it holds, read through the
// catalog apart from db.PurgeUser; the tables of skip are not counted.
func UserRows(t testing.TB, d *db.DB, orgID, userID string, skip ...string) map[string]int {
	t.Helper()
	orgSQL := `SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE p.name = $1`
	if d.Engine == db.Postgres {
		orgSQL = `SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = $1`
	}
	withOrg, withUser := names(t, d, orgSQL, "org_id"), names(t, d, orgSQL, "user_id")
	out := map[string]int{}
	for _, table := range withUser {
		if !slices.Contains(withOrg, table) || slices.Contains(skip, table) {
			continue
		}
		var n int
		if err := d.QueryRow(opCtx, `SELECT COUNT(*) FROM `+table+` WHERE org_id = $1 AND user_id = $2`, orgID, userID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			out[table] = n
		}
	}
	return out
}
