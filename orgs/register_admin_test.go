package orgs_test

import (
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

// TestRegisterWithAdmin checks that the organization and its first admin
// are created together, and that a failure storing the admin leaves no
// organization behind that nobody could sign in to.
func TestRegisterWithAdmin(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		f := newFixture(t, d)
		org := orgs.NewOrg{ID: "acme", Name: "Acme", AdminPassword: adminPW}
		admin := orgs.NewUser{ID: "alice", Name: "Alice", Password: userPW, Role: orgs.RoleMember}
		o, u, err := f.orgs.RegisterWithAdmin(ctx, org, admin)
		if err != nil {
			t.Fatal(err)
		}
		if o.ID != "acme" || u.OrgID != "acme" || u.ID != "alice" || u.Role != orgs.RoleAdmin {
			t.Fatalf("got org %q, user %q/%q role %q; want acme, acme/alice, admin", o.ID, u.OrgID, u.ID, u.Role)
		}
		if _, _, err := f.orgs.RegisterWithAdmin(ctx, org, admin); ctalk.ErrorCode(err) != ctalk.EConflict {
			t.Fatalf("second sign-up of acme: %v, want a conflict", err)
		}

		// Make storing the admin fail after the organization's row went in.
		trigger := []string{`CREATE TRIGGER refuse_user BEFORE INSERT ON users WHEN NEW.id = 'boom' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`}
		if d.Engine == db.Postgres {
			trigger = []string{
				`CREATE FUNCTION refuse_user() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.id = 'boom' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$`,
				`CREATE TRIGGER refuse_user BEFORE INSERT ON users FOR EACH ROW EXECUTE FUNCTION refuse_user()`,
			}
		}
		for _, stmt := range trigger {
			dbtest.ExecAsOwner(t, d, stmt)
		}
		admin.ID = "boom"
		if _, _, err := f.orgs.RegisterWithAdmin(ctx, orgs.NewOrg{ID: "globex", Name: "Globex", AdminPassword: adminPW}, admin); err == nil {
			t.Fatal("sign-up with a refused admin succeeded")
		}
		if _, err := f.orgs.Org(ctx, "globex"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Fatalf("organization of a failed sign-up: %v, want not found", err)
		}
	})
}
