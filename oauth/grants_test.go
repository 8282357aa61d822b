package oauth_test

import (
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/oauth"
	"github.com/ctalk/ctalk/orgs"
)

// TestGrants: a person's live grants are listed with their refresh
// token's expiry, newest first; revoked and expired ones are not; a person
// revokes only their own, and another's id is not found.
func TestGrants(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		cfg := auth.DefaultConfig()
		cfg.BcryptCost = 4
		a, err := auth.NewService(d, cfg)
		if err != nil {
			t.Fatal(err)
		}
		o := orgs.NewService(d, a)
		for _, org := range []string{"acme", "globex"} {
			if _, err := o.Register(ctx, orgs.NewOrg{ID: org, Name: org, AdminPassword: "correct horse battery"}); err != nil {
				t.Fatal(err)
			}
			for _, u := range []string{"bob", "carol"} {
				if _, err := o.AddUser(ctx, org, orgs.NewUser{ID: u, Name: u, Password: "hunter22-long"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		now := d.Now()
		grant := func(id, org, user string, created time.Time, refreshExpires time.Time, revoked bool) {
			t.Helper()
			err := d.Tx(ctx, func(q db.Querier) error {
				if _, err := q.Exec(ctx, `INSERT INTO oauth_grants (id, org_id, user_id, client_id, client_name, scope, resource, created_at, last_used_at)
					VALUES ($1, $2, $3, 'c', $4, 'ctalk', 'r', $5, $5)`, id, org, user, "client "+id, created); err != nil {
					return err
				}
				if revoked {
					if _, err := q.Exec(ctx, `UPDATE oauth_grants SET revoked_at = $1 WHERE id = $2`, now, id); err != nil {
						return err
					}
				}
				_, err := q.Exec(ctx, `INSERT INTO oauth_tokens (hash, grant_id, kind, created_at, expires_at) VALUES ($1, $2, 'refresh', $3, $4)`,
					"h-"+id, id, created, refreshExpires)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		grant("old", "acme", "bob", now.Add(-2*time.Hour), now.Add(24*time.Hour), false)
		grant("new", "acme", "bob", now.Add(-time.Hour), now.Add(48*time.Hour), false)
		grant("gone", "acme", "bob", now.Add(-time.Hour), now.Add(48*time.Hour), true)
		grant("stale", "acme", "bob", now.Add(-40*24*time.Hour), now.Add(-time.Hour), false)
		grant("carols", "acme", "carol", now, now.Add(time.Hour), false)
		grant("theirs", "globex", "bob", now, now.Add(time.Hour), false)
		s := oauth.NewService(d, a, oauth.DefaultConfig())
		gs, err := s.Grants(ctx, "acme", "bob")
		if err != nil {
			t.Fatal(err)
		}
		if len(gs) != 2 || gs[0].ID != "new" || gs[1].ID != "old" || !gs[0].ExpiresAt.Equal(now.Add(48*time.Hour)) || gs[0].ClientName != "client new" {
			t.Fatalf("bob's grants: %+v, want new then old, with their refresh expiry", gs)
		}
		for _, id := range []string{"carols", "theirs", "gone", "nope"} {
			if err := s.RevokeOwnGrant(ctx, "acme", "bob", id); ctalk.ErrorCode(err) != ctalk.ENotFound {
				t.Errorf("bob revoking %s: %v, want not found", id, err)
			}
		}
		if err := s.RevokeOwnGrant(ctx, "acme", "bob", "new"); err != nil {
			t.Fatal(err)
		}
		if gs, _ := s.Grants(ctx, "acme", "bob"); len(gs) != 1 || gs[0].ID != "old" {
			t.Errorf("after revoking new: %+v", gs)
		}
		for _, who := range [][2]string{{"acme", "carol"}, {"globex", "bob"}} {
			if gs, _ := s.Grants(ctx, who[0], who[1]); len(gs) != 1 {
				t.Errorf("%s/%s's grants: %+v, want theirs untouched", who[0], who[1], gs)
			}
		}
	})
}
