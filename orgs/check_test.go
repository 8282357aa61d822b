package orgs_test

import (
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

// fields lists the fields of errs, and fails unless every error is EInvalid.
func fields(t *testing.T, errs []orgs.FieldError) string {
	t.Helper()
	var out []string
	for _, e := range errs {
		if ctalk.ErrorCode(e.Err) != ctalk.EInvalid {
			t.Errorf("%s: %v, want invalid", e.Field, e.Err)
		}
		out = append(out, e.Field)
	}
	return strings.Join(out, ",")
}

// TestCheckNamesEveryBadField: a sign-up form learns every mistake at once,
// by field, and Register and AddUser refuse with the first of them, so the
// form and the tools apply one set of rules.
func TestCheckNamesEveryBadField(t *testing.T) {
	t.Parallel()
	org := orgs.NewOrg{ID: "Not An Id", Name: " ", AdminPassword: "short"}
	if got := fields(t, org.Check()); got != "org_id,name,admin_password" {
		t.Errorf("org fields = %q", got)
	}
	user := orgs.NewUser{ID: "ctalk_x", Name: strings.Repeat("n", orgs.MaxNameLen+1), Role: "owner",
		Ownership: []string{strings.Repeat("o", orgs.MaxOwnershipLen+1)}, Notes: "a\x00b", Password: "short"}
	if got := fields(t, user.Check()); got != "user_id,name,role,ownership,notes,password" {
		t.Errorf("user fields = %q", got)
	}
	if errs := (orgs.NewOrg{ID: "acme", Name: "Acme", AdminPassword: adminPW}).Check(); len(errs) != 0 {
		t.Errorf("a good org: %v", errs)
	}
	if errs := (orgs.NewUser{ID: "umar", Name: "Umar", Password: userPW, Ownership: []string{"billing"}}).Check(); len(errs) != 0 {
		t.Errorf("a good user: %v", errs)
	}

	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx := dbtest.Operator()
		_, err := f.orgs.Register(ctx, org)
		if want := org.Check()[0].Err; err == nil || err.Error() != want.Error() {
			t.Errorf("Register: %v, want the first mistake %v", err, want)
		}
		if _, err := f.orgs.Register(ctx, orgs.NewOrg{ID: "acme", Name: "Acme", AdminPassword: adminPW}); err != nil {
			t.Fatal(err)
		}
		_, err = f.orgs.AddUser(ctx, "acme", user)
		if want := user.Check()[0].Err; err == nil || err.Error() != want.Error() {
			t.Errorf("AddUser: %v, want the first mistake %v", err, want)
		}
	})
}
