package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestAuditVerifyCommand: "ctalk audit verify --org ID" checks the org's
// hash chain on the server's database and says it holds; once a row is
// edited in SQL it names that event and fails; a bad command line is
// refused before anything is opened. On both engines.
func TestAuditVerifyCommand(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			env, cmd := operatorCommand(t, engine, "audit")
			for _, bad := range [][]string{{}, {"check"}, {"verify"}, {"verify", "--org"}, {"verify", "--org", "Not An Id"}, {"verify", "--org", "acme", "extra"}} {
				if _, err := cmd(bad...); err == nil {
					t.Errorf("audit %q: no error", bad)
				}
			}
			if err := run(context.Background(), []string{"migrate", "up"}, env.get, io.Discard, io.Discard, nil); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			d, err := db.Connect(ctx, db.Config{URL: env["DATABASE_URL"], Path: env["RELAY_DB_PATH"], Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			l := audit.NewLog(d, slog.New(slog.DiscardHandler))
			for i := range 40 {
				l.Record(audit.Event{At: time.Now().UTC(), OrgID: "acme", UserID: "alice", Tool: "whoami", Outcome: "ok", DurationMS: float64(i)})
			}
			l.Close()
			if out, err := cmd("verify", "--org", "acme"); err != nil || !strings.Contains(out, "ok: 40 events checked, 1 to 40") {
				t.Fatalf("verify an untouched chain: %q, %v", out, err)
			}
			if out, err := cmd("verify", "--org=globex"); err != nil || !strings.Contains(out, "no chained audit events") {
				t.Fatalf("verify an org without events: %q, %v", out, err)
			}
			var id int64
			if err := d.QueryRow(ctx, `SELECT id FROM audit_events WHERE org_id = 'acme' AND seq = 17`).Scan(&id); err != nil {
				t.Fatal(err)
			}
			if _, err := dbtest.Exec(d, `UPDATE audit_events SET user_id = 'mallory' WHERE id = $1`, id); err != nil {
				t.Fatal(err)
			}
			out, err := cmd("verify", "--org", "acme")
			if err == nil || !strings.Contains(out, "BROKEN at event 17") || !strings.Contains(out, "16 events checked before it") {
				t.Fatalf("verify after an edit: %q, %v; want the break at event 17", out, err)
			}
		})
	}
}
