package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

// TestPasskeysCommand: the operator lists the passkeys that wait for
// confirmation, on the server's database, and confirms one by its id; the
// confirmation is audited in its org, a second one finds nothing to
// confirm, and a confirmed passkey is no longer listed. On both engines.
func TestPasskeysCommand(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			env, cmd := operatorCommand(t, engine, "passkeys")
			if _, err := cmd("waiting"); err == nil || !strings.Contains(err.Error(), "no ctalk schema") {
				t.Fatalf("waiting on an empty database: %v, want it to say there is no schema", err)
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
			a, err := auth.NewService(d, auth.Config{BcryptCost: 4})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := orgs.NewService(d, a).RegisterWithAdmin(ctx, orgs.NewOrg{ID: "acme", Name: "Acme", AdminPassword: "admin-password-1"},
				orgs.NewUser{ID: "alice", Name: "Alice", Password: "alice-password-1"}); err != nil {
				t.Fatal(err)
			}
			if out, err := cmd("waiting"); err != nil || out != "no passkey waits for confirmation\n" {
				t.Fatalf("waiting with none: %q, %v", out, err)
			}
			// Two passkeys added by Alice: one waits, one was confirmed.
			err = d.Tx(ctx, func(tx db.Querier) error {
				for _, k := range []struct{ id, name, hash string }{{"pk-waiting", "Alice's phone", "h1"}, {"pk-confirmed", "Alice's laptop", ""}} {
					var hash any
					if k.hash != "" {
						hash = k.hash
					}
					if _, err := tx.Exec(ctx, `INSERT INTO passkeys (id, org_id, user_id, user_handle, name, credential, created_at, confirm_hash, confirm_expires_at)
						VALUES ($1, 'acme', 'alice', 'handle', $2, '{}', $3, $4, $3)`, k.id, k.name, time.Date(2026, 12, 6, 9, 30, 0, 0, time.UTC), hash); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd("waiting")
			if err != nil || !strings.Contains(out, "pk-waiting") || !strings.Contains(out, `"Alice's phone"`) || !strings.Contains(out, "2026-12-06 09:30 UTC") || strings.Contains(out, "pk-confirmed") {
				t.Fatalf("waiting: %v\n%s", err, out)
			}
			for _, id := range []string{"pk-confirmed", "pk-unknown"} {
				if _, err := cmd("confirm", id); ctalk.ErrorCode(err) != ctalk.ENotFound {
					t.Errorf("confirm %s: %v, want not found", id, err)
				}
			}
			out, err = cmd("confirm", "pk-waiting")
			if err != nil || !strings.Contains(out, `confirmed the passkey "Alice's phone" of alice in acme`) {
				t.Fatalf("confirm: %q, %v", out, err)
			}
			keys, err := a.Passkeys(ctx, "acme", "alice")
			if err != nil || len(keys) != 2 || keys[0].Pending || keys[1].Pending {
				t.Fatalf("alice's passkeys after the confirmation: %+v, %v", keys, err)
			}
			if _, err := cmd("confirm", "pk-waiting"); ctalk.ErrorCode(err) != ctalk.ENotFound {
				t.Errorf("confirm again: %v, want not found", err)
			}
			if out, err := cmd("waiting"); err != nil || out != "no passkey waits for confirmation\n" {
				t.Errorf("waiting after: %q, %v", out, err)
			}
			log := audit.NewLog(d, slog.New(slog.DiscardHandler))
			defer log.Close()
			page, err := log.Query(ctx, "acme", audit.Query{Tool: "operator:confirm_passkey"})
			if err != nil || len(page.Events) != 1 || page.Events[0].UserID != "alice" || page.Events[0].Factor != audit.FactorOperator {
				t.Fatalf("audit of the confirmation: %+v, %v", page, err)
			}
		})
	}
}

// operatorCommand is the environment of a server's database on engine
// ("sqlite" or "postgres", a fresh schema), and a function that runs the
// operator's command name with arguments there, returning what it printed.
func operatorCommand(t *testing.T, engine, name string) (environ, func(args ...string) (string, error)) {
	t.Helper()
	env := testEnviron(t)
	if engine == "postgres" {
		env["DATABASE_URL"] = dbtest.PostgresURL(t)
	}
	return env, func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{name}, args...), env.get, &out, io.Discard, nil)
		return out.String(), err
	}
}
