package channels

import (
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestRemovedMembersLeaveChannels: a member the org removed is neither
// listed in a channel's members nor can be invited, as if they did not
// exist; the channel keeps working for everyone else.
func TestRemovedMembersLeaveChannels(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := fixture(t, d)
		ctx := dbtest.Operator()
		must(s.Create(ctx, alice, NewChannel{Name: "ops", Members: []string{"bob"}}))
		// As orgs.RemoveUser marks a member removed.
		if _, err := dbtest.Exec(d, `UPDATE users SET removed_at = $1, password_hash = '' WHERE org_id = 'acme' AND id IN ('bob', 'carol')`, d.Now()); err != nil {
			t.Fatal(err)
		}
		_, members, err := s.Get(ctx, alice, "ops")
		if err != nil {
			t.Fatal(err)
		}
		if len(members) != 1 || members[0].UserID != "alice" {
			t.Errorf("members after bob's removal = %+v, want alice only", members)
		}
		_, err = s.Invite(ctx, alice, "ops", []string{"carol"})
		wantCode(t, err, ctalk.ENotFound)
	})
}
