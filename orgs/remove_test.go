package orgs_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/wait"
)

func TestRemoveUser(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		ctx := dbtest.Operator()
		in := inbox.NewService(d, inbox.DefaultConfig(), wait.NewBroker())
		bobToken, _, err := f.auth.Login(ctx, "a", "bob", userPW, "")
		if err != nil {
			t.Fatal(err)
		}
		q, err := in.Ask(ctx, ctalk.Caller{OrgID: "a", UserID: "bob"}, inbox.Ask{To: "alice", Text: "where is the runbook?"})
		if err != nil {
			t.Fatal(err)
		}

		// An org's id cannot reach a user of another org.
		_, err = f.orgs.RemoveUser(ctx, "b", "bob")
		wantCode(t, err, ctalk.ENotFound, `user "bob" not found`)

		r, err := f.orgs.RemoveUser(ctx, "a", " Bob ")
		if err != nil {
			t.Fatal(err)
		}
		if r.UserID != "bob" || r.TokensRevoked != 1 || r.RemovedAt.IsZero() {
			t.Errorf("removal = %+v, want bob with 1 token revoked", r)
		}

		_, err = f.auth.Authenticate(ctx, bobToken)
		wantCode(t, err, ctalk.EUnauthorized, "log in again")
		_, _, err = f.auth.Login(ctx, "a", "bob", userPW, "")
		wantCode(t, err, ctalk.EUnauthorized, "login failed")
		_, err = f.orgs.User(ctx, "a", "bob")
		wantCode(t, err, ctalk.ENotFound, `user "bob" not found`)
		_, _, err = f.orgs.Member(ctx, "a", "bob")
		wantCode(t, err, ctalk.ENotFound, `user "bob" not found`)
		_, err = f.orgs.SetProfileNotes(ctx, "a", "bob", "gone")
		wantCode(t, err, ctalk.ENotFound, `user "bob" not found`)
		users, err := f.orgs.Users(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if len(users) != 1 || users[0].ID != "alice" {
			t.Errorf("users after removing bob = %v, want alice alone", users)
		}
		_, err = f.orgs.RemoveUser(ctx, "a", "bob")
		wantCode(t, err, ctalk.ENotFound, `user "bob" not found`)
		_, err = in.Ask(ctx, ctalk.Caller{OrgID: "a", UserID: "alice"}, inbox.Ask{To: "bob", Text: "still there?"})
		wantCode(t, err, ctalk.ENotFound, `user "bob" not found`)

		// The question bob asked stays in alice's inbox, from a former member.
		items, _, err := in.Inbox(ctx, ctalk.Caller{OrgID: "a", UserID: "alice"}, 10, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 1 || items[0].ID != q.ID || items[0].Text != "where is the runbook?" || items[0].Sender.UserID != "bob" || !items[0].Sender.FormerMember {
			t.Fatalf("alice's inbox = %s, want bob's question from a former member", fmt.Sprint(items))
		}

		// The id stays bob's: re-adding it is refused, saying why.
		_, err = f.orgs.AddUser(ctx, "a", orgs.NewUser{ID: "bob", Name: "Another Bob", Password: userPW})
		wantCode(t, err, ctalk.EConflict, "former member")
	})
}

func TestRemoveLastAdmin(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		ctx := dbtest.Operator()
		_, err := f.orgs.RemoveUser(ctx, "a", "alice")
		wantCode(t, err, ctalk.EConflict, "last admin")
		if _, err := f.orgs.AddUser(ctx, "a", orgs.NewUser{ID: "ann", Name: "Ann", Password: userPW, Role: orgs.RoleAdmin}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.orgs.RemoveUser(ctx, "a", "alice"); err != nil {
			t.Fatalf("removing one of two admins: %v", err)
		}
		_, err = f.orgs.RemoveUser(ctx, "a", "ann")
		wantCode(t, err, ctalk.EConflict, "last admin")
		// Members may all go.
		if _, err := f.orgs.RemoveUser(ctx, "a", "bob"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRemoveLastTwoAdminsConcurrently has the last two admins of an org
// removed at the same moment, in many orgs: exactly one removal may win.
func TestRemoveLastTwoAdminsConcurrently(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx := dbtest.Operator()
		for i := range 20 {
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
					_, errs[j] = f.orgs.RemoveUser(ctx, org, id)
				})
			}
			close(start)
			wg.Wait()
			removed := 0
			for _, err := range errs {
				switch ctalk.ErrorCode(err) {
				case "":
					removed++
				case ctalk.EConflict:
				default:
					t.Fatalf("%s: removal failed: %v", org, err)
				}
			}
			users, err := f.orgs.Users(ctx, org)
			if err != nil {
				t.Fatal(err)
			}
			if removed != 1 || len(users) != 1 || users[0].Role != orgs.RoleAdmin {
				t.Fatalf("%s: %d removals succeeded, admins left %v; want one of each", org, removed, users)
			}
		}
	})
}
