package orgs_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

// TestEmailIsOnePerMemberWithoutCase: an address belongs to one current
// member of an org, compared without case; another org, a former member's
// address and clearing one are free.
func TestEmailIsOnePerMemberWithoutCase(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		ctx := dbtest.Operator()
		u, err := f.orgs.SetEmail(ctx, "a", "bob", " Bob@Example.COM ")
		if err != nil || u.Email != "bob@example.com" {
			t.Fatalf("SetEmail: %+v, %v", u, err)
		}
		if _, err := f.orgs.SetEmail(ctx, "a", "alice", "BOB@example.com"); ctalk.ErrorCode(err) != ctalk.EConflict {
			t.Errorf("a second member with the address: %v, want conflict", err)
		}
		if _, err := f.orgs.AddUser(ctx, "a", orgs.NewUser{ID: "carol", Name: "Carol", Password: userPW, Email: "bob@EXAMPLE.com"}); ctalk.ErrorCode(err) != ctalk.EConflict {
			t.Errorf("a new member with the address: %v, want conflict", err)
		}
		if _, err := f.orgs.SetEmail(ctx, "b", "dave", "bob@example.com"); err != nil {
			t.Errorf("the address in another org: %v", err)
		}
		if _, err := f.orgs.SetEmail(ctx, "a", "bob", "bob@example.com"); err != nil {
			t.Errorf("setting one's own address again: %v", err)
		}
		for _, bad := range []string{"bob", "Bob <bob@example.com>", "bob@localhost", "a@b@c.com"} {
			if _, err := f.orgs.SetEmail(ctx, "a", "alice", bad); ctalk.ErrorCode(err) != ctalk.EInvalid {
				t.Errorf("address %q: %v, want invalid", bad, err)
			}
		}
		if _, err := f.orgs.RemoveUser(ctx, "a", "bob"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.orgs.SetEmail(ctx, "a", "alice", "bob@example.com"); err != nil {
			t.Errorf("a former member's address: %v", err)
		}
		if u, err := f.orgs.SetEmail(ctx, "a", "alice", ""); err != nil || u.Email != "" {
			t.Errorf("clearing the address: %+v, %v", u, err)
		}
		if _, err := f.orgs.SetEmail(ctx, "b", "bob", "x@example.com"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("a member of another org: %v, want not found", err)
		}
	})
}

// TestInviteConflicts: an invite cannot take a member's id (also a former
// one's) or address, nor one waiting for another invite; a member cannot
// be added under an id or address an invite waits for.
func TestInviteConflicts(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		ctx := dbtest.Operator()
		if _, err := f.orgs.SetEmail(ctx, "a", "bob", "bob@example.com"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.orgs.Invite(ctx, ctalk.Caller{OrgID: "a", UserID: "alice"}, orgs.NewInvite{Email: "dan@example.com", UserID: "dan", Name: "Dan"}); err != nil {
			t.Fatal(err)
		}
		for name, in := range map[string]orgs.NewInvite{
			"a member's id":      {Email: "x@example.com", UserID: "bob", Name: "X"},
			"a member's address": {Email: "BOB@example.com", UserID: "x", Name: "X"},
			"an invited id":      {Email: "y@example.com", UserID: "dan", Name: "Y"},
			"an invited address": {Email: "dan@example.com", UserID: "y", Name: "Y"},
		} {
			if _, _, err := f.orgs.Invite(ctx, ctalk.Caller{OrgID: "a", UserID: "alice"}, in); ctalk.ErrorCode(err) != ctalk.EConflict {
				t.Errorf("%s: %v, want conflict", name, err)
			}
		}
		if _, err := f.orgs.AddUser(ctx, "a", orgs.NewUser{ID: "dan", Name: "Dan", Password: userPW}); ctalk.ErrorCode(err) != ctalk.EConflict {
			t.Errorf("adding the invited id: %v, want conflict", err)
		}
		if _, err := f.orgs.SetEmail(ctx, "a", "alice", "dan@example.com"); ctalk.ErrorCode(err) != ctalk.EConflict {
			t.Errorf("taking the invited address: %v, want conflict", err)
		}
		if _, _, err := f.orgs.Invite(ctx, ctalk.Caller{OrgID: "a", UserID: "alice"}, orgs.NewInvite{UserID: "z", Name: "Z"}); ctalk.ErrorCode(err) != ctalk.EInvalid {
			t.Errorf("an invite without an address: %v, want invalid", err)
		}
		if _, _, err := f.orgs.Invite(ctx, ctalk.Caller{OrgID: "a", UserID: "alice"}, orgs.NewInvite{Email: "z@example.com", UserID: "z", Name: "Z\r\nReset your password"}); ctalk.ErrorCode(err) != ctalk.EInvalid || !strings.Contains(ctalk.ErrorMessage(err), "line break") {
			t.Errorf("an invite of a name of two lines: %v, want invalid", err)
		}
		if _, _, err := f.orgs.Invite(ctx, ctalk.Caller{OrgID: "b", UserID: "alice"}, orgs.NewInvite{Email: "dan@example.com", UserID: "dan", Name: "Dan"}); err != nil {
			t.Errorf("the same invite in another org: %v", err)
		}
	})
}

// TestInviteAcceptedOnce: of concurrent accepts of one link, one creates
// the member and the others find the link dead.
func TestInviteAcceptedOnce(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		ctx := dbtest.Operator()
		_, raw, err := f.orgs.Invite(ctx, ctalk.Caller{OrgID: "a", UserID: "alice"}, orgs.NewInvite{Email: "dan@example.com", UserID: "dan", Name: "Dan"})
		if err != nil {
			t.Fatal(err)
		}
		const n = 8
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := f.orgs.AcceptInvite(ctx, raw, fmt.Sprintf("password-%d", i))
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		ok := 0
		for err := range errs {
			switch ctalk.ErrorCode(err) {
			case "":
				ok++
			case ctalk.ENotFound:
			default:
				t.Errorf("accept: %v", err)
			}
		}
		if ok != 1 {
			t.Errorf("%d accepts succeeded, want 1", ok)
		}
		if u, err := f.orgs.User(ctx, "a", "dan"); err != nil || u.Email != "dan@example.com" {
			t.Errorf("the member: %+v, %v", u, err)
		}
	})
}
