package auth_test

import (
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestUsingAResetLinkEndsTheOthers: bob asks for two reset links and uses
// one; the other no longer opens the page nor sets a password, while
// alice's own link still works.
func TestUsingAResetLinkEndsTheOthers(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		for _, u := range []string{"alice", "bob"} {
			err := d.Write(ctx, func(q db.Querier) error {
				_, err := q.Exec(ctx, `UPDATE users SET email = $1 WHERE org_id = 'acme' AND id = $2`, u+"@example.com", u)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		link := func(who string) string {
			t.Helper()
			r, err := f.auth.RequestReset(ctx, "acme", who)
			if err != nil || r.Token == "" {
				t.Fatalf("reset of %s: %+v, %v", who, r, err)
			}
			return r.Token
		}
		first, second, alices := link("bob"), link("bob@example.com"), link("alice")

		if _, _, err := f.auth.UseReset(ctx, first, "new password one"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.auth.ResetByLink(ctx, second); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("bob's other link opens the page after the first was used: %v", err)
		}
		if _, _, err := f.auth.UseReset(ctx, second, "new password two"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("bob's other link set his password after the first was used: %v", err)
		}
		if _, _, err := f.auth.Login(ctx, "acme", "bob", "new password one", "192.0.2.1"); err != nil {
			t.Errorf("bob's password is not the one his used link set: %v", err)
		}
		if _, _, err := f.auth.UseReset(ctx, alices, "alice's new one"); err != nil {
			t.Errorf("alice's link stopped working when bob used his: %v", err)
		}
	})
}
