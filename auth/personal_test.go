package auth_test

import (
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestPersonalToken: a personal token is stored as its hash only, kind
// personal with its label, authenticates as its person, outlives the idle
// expiry of login tokens, and ends at the lifetime chosen.
func TestPersonalToken(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		bob := &auth.Session{OrgID: "acme", UserID: "bob"}
		for _, bad := range []struct {
			label string
			days  int
			want  string
		}{{"", 30, "label is required"}, {"ci", 31, "choose one of"}, {"ci", 0, "choose one of"}} {
			_, _, err := f.auth.CreatePersonalToken(ctx, bob, bad.label, bad.days)
			wantCode(t, err, ctalk.EInvalid, bad.want)
		}
		raw, cred, err := f.auth.CreatePersonalToken(ctx, bob, "  build server ", 30)
		if err != nil {
			t.Fatal(err)
		}
		if !auth.WellFormed(raw) || cred.Label != "build server" || cred.Kind != auth.KindPersonal {
			t.Fatalf("token %q, credential %+v", raw, cred)
		}
		var kind, label string
		if err := d.QueryRow(ctx, `SELECT kind, label FROM tokens WHERE hash = $1`, auth.HashToken(raw)).Scan(&kind, &label); err != nil {
			t.Fatalf("the token is not stored under its hash: %v", err)
		}
		if kind != "personal" || label != "build server" {
			t.Fatalf("stored kind %q label %q", kind, label)
		}
		var n int
		d.QueryRow(ctx, `SELECT COUNT(*) FROM tokens WHERE hash = $1`, raw).Scan(&n)
		if n != 0 {
			t.Fatal("the raw token is stored")
		}
		sess, err := f.auth.Authenticate(ctx, raw)
		if err != nil || sess.UserID != "bob" || sess.OrgID != "acme" {
			t.Fatalf("authenticate: %+v, %v", sess, err)
		}
		login := f.tokens(t, "bob", userPW, 1)[0]
		f.clock.advance(testConfig().IdleTTL + time.Hour)
		f.wantLive(t, false, login)
		f.wantLive(t, true, raw)
		f.clock.advance(30*24*time.Hour - testConfig().IdleTTL)
		f.wantLive(t, false, raw)
	})
}

// TestCredentials: a person's list holds their live login tokens, personal
// tokens and browser sessions, marks the session it was asked from, and
// never another person's; each can be revoked by its id, at once, and an
// id of another person's is not found.
func TestCredentials(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		login := f.tokens(t, "bob", userPW, 1)[0]
		personal, _, err := f.auth.CreatePersonalToken(ctx, &auth.Session{OrgID: "acme", UserID: "bob"}, "laptop", 90)
		if err != nil {
			t.Fatal(err)
		}
		rawWeb, web, err := f.auth.SignIn(ctx, "acme", "bob", userPW, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.auth.SignIn(ctx, "acme", "bob", userPW, ""); err != nil {
			t.Fatal(err)
		}
		aliceTok := f.tokens(t, "alice", userPW, 1)[0]
		list, err := f.auth.Credentials(ctx, web)
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		current := 0
		for _, c := range list {
			kinds[c.Kind]++
			if c.Current {
				current++
			}
			if c.Kind == auth.KindPersonal && (c.Label != "laptop" || c.ExpiresAt.Sub(c.CreatedAt) != 90*24*time.Hour) {
				t.Errorf("personal token listed as %+v", c)
			}
		}
		if kinds[auth.KindLogin] != 1 || kinds[auth.KindPersonal] != 1 || kinds[auth.KindSession] != 2 || current != 1 {
			t.Fatalf("listed %v with %d current, want 1 login, 1 personal, 2 sessions, 1 current: %+v", kinds, current, list)
		}
		aliceList, _ := f.auth.Credentials(ctx, &auth.Session{OrgID: "acme", UserID: "alice"})
		for _, c := range aliceList {
			if _, err := f.auth.RevokeCredential(ctx, web, c.Kind, c.ID); ctalk.ErrorCode(err) != ctalk.ENotFound {
				t.Errorf("revoking alice's %s as bob: %v, want not found", c.Kind, err)
			}
		}
		f.wantLive(t, true, aliceTok)
		if _, err := f.auth.RevokeCredential(ctx, web, auth.KindLogin, "short"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("malformed id: %v", err)
		}
		for _, c := range list {
			cur, err := f.auth.RevokeCredential(ctx, web, c.Kind, c.ID)
			if err != nil || cur != c.Current {
				t.Fatalf("revoke %s: current %v, %v", c.Kind, cur, err)
			}
			if _, err := f.auth.RevokeCredential(ctx, web, c.Kind, c.ID); ctalk.ErrorCode(err) != ctalk.ENotFound {
				t.Errorf("revoking %s twice: %v, want not found", c.Kind, err)
			}
		}
		f.wantLive(t, false, login, personal)
		if _, err := f.auth.WebSession(ctx, rawWeb); ctalk.ErrorCode(err) != ctalk.EUnauthorized {
			t.Errorf("revoked browser session still works: %v", err)
		}
		if list, _ := f.auth.Credentials(ctx, web); len(list) != 0 {
			t.Errorf("after revoking all, still listed: %+v", list)
		}
	})
}
