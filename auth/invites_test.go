package auth_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

// TestInviteLimitsHoldUnderConcurrency has two admins (alice, and the
// org's admin password, which invites as nobody) send ten invites each at
// once: each admin sends at most InviteMaxPerAdmin, the org
// InviteMaxPerOrg in all, and the rest are refused as rate limited. A
// revoked invite still counts; once the window has passed, resends count
// as invites do.
func TestInviteLimitsHoldUnderConcurrency(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d, func(c *auth.Config) { c.InviteMaxPerAdmin, c.InviteMaxPerOrg = 3, 5 })
		ctx := dbtest.Operator()
		admins := []string{"alice", ""}
		var mu sync.Mutex
		sent := map[string]int{}
		var wg sync.WaitGroup
		for _, by := range admins {
			for i := range 10 {
				wg.Go(func() {
					id := fmt.Sprintf("new%s%d", by, i)
					_, _, err := f.orgs.Invite(ctx, ctalk.Caller{OrgID: "acme", UserID: by}, orgs.NewInvite{Email: id + "@example.com", UserID: id, Name: "New"})
					mu.Lock()
					defer mu.Unlock()
					switch ctalk.ErrorCode(err) {
					case "":
						sent[by]++
					case ctalk.ERateLimited:
					default:
						t.Errorf("invite by %q: %v", by, err)
					}
				})
			}
		}
		wg.Wait()
		if sent["alice"] > 3 || sent[""] > 3 || sent["alice"]+sent[""] != 5 {
			t.Fatalf("sent %v, want at most 3 by each admin and 5 in all", sent)
		}
		invites, err := f.auth.Invites(ctx, "acme")
		if err != nil || len(invites) != 5 {
			t.Fatalf("%d invites stored (%v), want 5", len(invites), err)
		}

		// Revoking frees nothing: the mail went.
		if err := f.auth.RevokeInvite(ctx, "acme", invites[0].UserID); err != nil {
			t.Fatal(err)
		}
		_, _, err = f.orgs.Invite(ctx, ctalk.Caller{OrgID: "acme", UserID: "bob"}, orgs.NewInvite{Email: "x@example.com", UserID: "x", Name: "X"})
		wantCode(t, err, ctalk.ERateLimited, "invites")

		f.clock.advance(auth.DefaultConfig().InviteWindow + time.Second)
		alice := ctalk.Caller{OrgID: "acme", UserID: "alice"}
		for i := range 3 {
			if _, _, err := f.auth.RenewInvite(ctx, alice, invites[1].UserID); err != nil {
				t.Fatalf("resend %d: %v", i+1, err)
			}
		}
		_, _, err = f.auth.RenewInvite(ctx, alice, invites[1].UserID)
		wantCode(t, err, ctalk.ERateLimited, "you have sent 3 invites")
		if _, _, err := f.auth.RenewInvite(ctx, alice, "nobody"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("resending an invite that does not exist: %v, want not found first", err)
		}
	})
}
