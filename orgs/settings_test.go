package orgs_test

import (
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestSetApprovalMode checks the org-settings rule in the domain, as
// update_org_settings relies on it: a new org approves by agent, either
// mode can be set and is stored, anything else is refused and changes
// nothing, and an unknown org is not found.
func TestSetApprovalMode(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		f := newFixture(t, d)
		f.twoOrgs(t)
		if o, err := f.orgs.Org(ctx, "a"); err != nil || o.ApprovalMode != "agent" {
			t.Fatalf("a new org: %+v, %v; want approval mode agent", o, err)
		}
		for _, mode := range []string{"human", "agent", "human"} {
			o, err := f.orgs.SetApprovalMode(ctx, "a", mode)
			if err != nil || o.ApprovalMode != mode {
				t.Fatalf("SetApprovalMode(%q) = %+v, %v", mode, o, err)
			}
			if stored, err := f.orgs.Org(ctx, "a"); err != nil || stored.ApprovalMode != mode {
				t.Fatalf("after SetApprovalMode(%q) the org reads %+v, %v", mode, stored, err)
			}
		}
		for _, bad := range []string{"", "none", "Human", "agent "} {
			_, err := f.orgs.SetApprovalMode(ctx, "a", bad)
			wantCode(t, err, ctalk.EInvalid, `use "agent" or "human"`)
		}
		if o, err := f.orgs.Org(ctx, "a"); err != nil || o.ApprovalMode != "human" {
			t.Fatalf("refused modes changed the org: %+v, %v", o, err)
		}
		if o, err := f.orgs.Org(ctx, "b"); err != nil || o.ApprovalMode != "agent" {
			t.Fatalf("setting org a changed org b: %+v, %v", o, err)
		}
		_, err := f.orgs.SetApprovalMode(ctx, "nobody", "human")
		wantCode(t, err, ctalk.ENotFound, "nobody")
	})
}

// TestSettingsSavedAtTheDatabaseClock checks that saving settings stamps
// settings_saved_at with the service's clock, as every other write does,
// so that a server whose clock is set (the screenshots' demo, tests) sees
// the time it set.
func TestSettingsSavedAtTheDatabaseClock(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		f := newFixture(t, d)
		f.twoOrgs(t)
		then := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
		orig := d.Now
		d.Now = func() time.Time { return then }
		defer func() { d.Now = orig }()
		if _, err := f.orgs.SetApprovalMode(ctx, "a", "human"); err != nil {
			t.Fatal(err)
		}
		var got time.Time
		if err := d.QueryRow(ctx, `SELECT settings_saved_at FROM orgs WHERE id = 'a'`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if !got.Equal(then) {
			t.Errorf("settings_saved_at = %v, want the database clock's %v", got, then)
		}
	})
}
