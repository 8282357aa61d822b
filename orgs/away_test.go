package orgs_test

import (
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

// TestAway: bob sets himself away with alice as delegate; every read of
// him shows it, AwayUntil says until when; bad dates, himself or another
// org's member as delegate are refused; clearing brings him back.
func TestAway(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		ctx := dbtest.Operator()
		bob := ctalk.Caller{OrgID: "a", UserID: "bob"}
		until := d.Now().Add(72 * time.Hour).Truncate(time.Second)
		_, err := f.orgs.SetAway(ctx, bob, orgs.Away{Until: d.Now().Add(-time.Hour)})
		wantCode(t, err, ctalk.EInvalid, "in the future")
		_, err = f.orgs.SetAway(ctx, bob, orgs.Away{Until: d.Now().Add(400 * 24 * time.Hour)})
		wantCode(t, err, ctalk.EInvalid, "a year")
		_, err = f.orgs.SetAway(ctx, bob, orgs.Away{Until: until, Delegate: "bob"})
		wantCode(t, err, ctalk.EInvalid, "someone else")
		_, err = f.orgs.SetAway(ctx, bob, orgs.Away{Until: until, Delegate: "dave"})
		wantCode(t, err, ctalk.ENotFound, "not found")
		u, err := f.orgs.SetAway(ctx, bob, orgs.Away{Until: until, Delegate: "alice", Note: "back Monday"})
		if err != nil {
			t.Fatal(err)
		}
		if u.Away == nil || !u.Away.Until.Equal(until) || u.Away.Delegate != "alice" || u.Away.Note != "back Monday" {
			t.Fatalf("SetAway = %+v", u.Away)
		}
		for what, read := range map[string]func() (*orgs.User, error){
			"User":   func() (*orgs.User, error) { return f.orgs.User(ctx, "a", "bob") },
			"Member": func() (*orgs.User, error) { u, _, err := f.orgs.Member(ctx, "a", "bob"); return u, err },
		} {
			if u, err := read(); err != nil || u.Away == nil || u.Away.Delegate != "alice" {
				t.Fatalf("%s after SetAway: %+v, %v", what, u, err)
			}
		}
		if at, err := f.orgs.AwayUntil(ctx, "a", "bob"); err != nil || !at.Equal(until) {
			t.Fatalf("AwayUntil = %v, %v; want %v", at, err, until)
		}
		if at, err := f.orgs.AwayUntil(ctx, "b", "bob"); err != nil || !at.IsZero() {
			t.Fatalf("AwayUntil in another org = %v, %v; want zero", at, err)
		}
		if u, err := f.orgs.ClearAway(ctx, bob); err != nil || u.Away != nil {
			t.Fatalf("ClearAway = %+v, %v", u, err)
		}
		if u, _, err := f.orgs.Member(ctx, "a", "bob"); err != nil || u.Away != nil {
			t.Fatalf("Member after ClearAway = %+v, %v", u, err)
		}
	})
}
