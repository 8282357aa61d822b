package orgs_test

import (
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

func TestOwnershipJunk(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		ctx := dbtest.Operator()
		add := func(own []string) (*orgs.User, error) {
			return f.orgs.AddUser(ctx, "a", orgs.NewUser{ID: "umar", Name: "Umar", Password: userPW, Ownership: own})
		}
		for _, tc := range []struct {
			name string
			own  []string
			want string
		}{
			{"10,000 empty entries", make([]string, 10000), "ownership has 10000 entries, 10000 of them empty; at most 50"},
			{"51 blank entries", strings.Split(strings.Repeat(" ,", 50), ","), "ownership has 51 entries, 51 of them empty; at most 50"},
			{"an entry of 201 characters after trimming", []string{"alpha", "  " + strings.Repeat("o", 201) + "  "}, "at most 200 characters; entry 2 has 201"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := add(tc.own)
				wantCode(t, err, ctalk.EInvalid, tc.want)
			})
		}
		u, err := add(orgs.SplitOwnership(" alpha ,, beta,"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(u.Ownership, "|"); got != "alpha|beta" {
			t.Errorf("ownership = %q, want alpha|beta: trimmed, empties dropped", got)
		}
		if _, err := f.orgs.AddUser(ctx, "a", orgs.NewUser{ID: "max", Name: "Max", Password: userPW, Ownership: make([]string, orgs.MaxOwnership)}); err != nil {
			t.Errorf("%d empty entries: %v, want accepted as no areas", orgs.MaxOwnership, err)
		}
	})
}
