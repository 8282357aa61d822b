package orgs_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

func TestSetRole(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		ctx := dbtest.Operator()
		_, err := f.orgs.SetRole(ctx, "a", "alice", orgs.RoleMember)
		wantCode(t, err, ctalk.EConflict, "last admin")
		_, err = f.orgs.SetRole(ctx, "a", "bob", "owner")
		wantCode(t, err, ctalk.EInvalid, "use \"member\" or \"admin\"")
		_, err = f.orgs.SetRole(ctx, "a", "dave", orgs.RoleAdmin)
		wantCode(t, err, ctalk.ENotFound, `user "dave" not found`)
		_, err = f.orgs.SetRole(ctx, "nope", "bob", orgs.RoleAdmin)
		wantCode(t, err, ctalk.ENotFound, `organization "nope" not found`)
		bobTok, _, err := f.auth.Login(ctx, "a", "bob", userPW, "")
		if err != nil {
			t.Fatal(err)
		}
		// A check before the change, which the token cache may keep.
		if sess, err := f.auth.Authenticate(ctx, bobTok); err != nil || sess.IsAdmin() {
			t.Fatalf("bob's token before promotion: %+v, %v", sess, err)
		}
		u, err := f.orgs.SetRole(ctx, "a", "bob", orgs.RoleAdmin)
		if err != nil || u.Role != orgs.RoleAdmin {
			t.Fatalf("promote bob: %+v, %v", u, err)
		}
		if sess, err := f.auth.Authenticate(ctx, bobTok); err != nil || !sess.IsAdmin() {
			t.Fatalf("bob's token after promotion: %+v, %v; want an admin at once", sess, err)
		}
		if _, err := f.orgs.SetRole(ctx, "a", "alice", orgs.RoleMember); err != nil {
			t.Fatalf("demote one of two admins: %v", err)
		}
		_, err = f.orgs.SetRole(ctx, "a", "bob", orgs.RoleMember)
		wantCode(t, err, ctalk.EConflict, "last admin")
		if u, _ := f.orgs.User(ctx, "b", "alice"); u.Role != orgs.RoleAdmin {
			t.Error("a change in org a reached org b")
		}
	})
}

// TestDemoteLastTwoAdminsConcurrently has the last two admins of an org
// demoted at the same moment, or one demoted while the other is removed, in
// many orgs: exactly one change may win, and an admin stays.
func TestDemoteLastTwoAdminsConcurrently(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx := dbtest.Operator()
		for i := range 30 {
			org := fmt.Sprintf("org%d", i)
			if _, err := f.orgs.Register(ctx, orgs.NewOrg{ID: org, Name: org, AdminPassword: adminPW}); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"ann", "ben"} {
				if _, err := f.orgs.AddUser(ctx, org, orgs.NewUser{ID: id, Name: id, Password: userPW, Role: orgs.RoleAdmin}); err != nil {
					t.Fatal(err)
				}
			}
			start := make(chan struct{})
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for j, id := range []string{"ann", "ben"} {
				wg.Go(func() {
					<-start
					if j == 1 && i%2 == 1 {
						_, errs[j] = f.orgs.RemoveUser(ctx, org, id)
						return
					}
					_, errs[j] = f.orgs.SetRole(ctx, org, id, orgs.RoleMember)
				})
			}
			close(start)
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch ctalk.ErrorCode(err) {
				case "":
					won++
				case ctalk.EConflict:
				default:
					t.Fatalf("%s: change failed: %v", org, err)
				}
			}
			users, err := f.orgs.Users(ctx, org)
			if err != nil {
				t.Fatal(err)
			}
			admins := 0
			for _, u := range users {
				if u.Role == orgs.RoleAdmin {
					admins++
				}
			}
			if won != 1 || admins != 1 {
				t.Fatalf("%s: %d changes succeeded, %d admins left; want one of each", org, won, admins)
			}
		}
	})
}
