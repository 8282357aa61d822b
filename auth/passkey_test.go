package auth_test

import (
	"errors"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestPasskeyCounterAdvancesOnce: eight uses of one passkey at once with
// the same signature counter (a passkey and its copies) let exactly one
// through; the others are refused as a copy and recorded on the passkey. A
// counter that goes back is refused; one that advances passes; an
// authenticator that keeps no counter (always 0) is not taken for a copy.
func TestPasskeyCounterAdvancesOnce(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		for _, id := range []string{"a2V5", "bm9jb3VudA"} {
			err := d.Write(ctx, func(q db.Querier) error {
				_, err := q.Exec(ctx, `INSERT INTO passkeys (id, org_id, user_id, user_handle, name, credential, sign_count, created_at) VALUES ($1, 'acme', 'bob', 'aGFuZGxl', 'Phone', '{}', $2, $3)`,
					id, map[string]int{"a2V5": 5, "bm9jb3VudA": 0}[id], d.Now())
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		got := outcomes(t, 8, func(int) error { return auth.UsePasskey(ctx, f.auth, "acme", "bob", "a2V5", 6) })
		if got[""] != 1 || got[ctalk.EForbidden] != 7 {
			t.Fatalf("uses with one counter at once: %v, want 1 through and 7 refused", got)
		}
		var cloned *auth.ClonedPasskeyError
		if err := auth.UsePasskey(ctx, f.auth, "acme", "bob", "a2V5", 3); !errors.As(err, &cloned) || cloned.UserID != "bob" {
			t.Fatalf("a counter that went back: %v", err)
		}
		if err := auth.UsePasskey(ctx, f.auth, "acme", "bob", "a2V5", 7); err != nil {
			t.Fatalf("a counter that advanced: %v", err)
		}
		for range 2 {
			if err := auth.UsePasskey(ctx, f.auth, "acme", "bob", "bm9jb3VudA", 0); err != nil {
				t.Fatalf("an authenticator without a counter: %v", err)
			}
		}
		var seen, count int
		if err := d.QueryRow(ctx, `SELECT COUNT(clone_seen_at), MAX(sign_count) FROM passkeys WHERE id = 'a2V5'`).Scan(&seen, &count); err != nil || seen != 1 || count != 7 {
			t.Fatalf("the passkey: %d copies seen, counter %d (%v); want the copy recorded and the counter 7", seen, count, err)
		}
	})
}
