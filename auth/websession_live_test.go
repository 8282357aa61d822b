package auth_test

import (
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestStillSignedInIsNotAUse: a page's live stream checks its session
// without keeping it from going idle, and sees it end when it is signed out.
func TestStillSignedInIsNotAUse(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		raw, _, err := f.auth.SignIn(ctx, "acme", "bob", userPW, "")
		if err != nil {
			t.Fatal(err)
		}
		sess, err := f.auth.WebSession(ctx, raw)
		if err != nil {
			t.Fatal(err)
		}
		// Checked often, well within the idle limit each time, the session
		// still goes idle: the checks do not count as use.
		for range 3 {
			f.clock.advance(auth.WebSessionIdleTTL / 4)
			if err := f.auth.StillSignedIn(ctx, sess); err != nil {
				t.Fatalf("still signed in after %v: %v", auth.WebSessionIdleTTL/4, err)
			}
		}
		f.clock.advance(auth.WebSessionIdleTTL/4 + time.Second)
		wantCode(t, f.auth.StillSignedIn(ctx, sess), ctalk.EUnauthorized, "sign in again")

		raw, _, err = f.auth.SignIn(ctx, "acme", "bob", userPW, "")
		if err != nil {
			t.Fatal(err)
		}
		if sess, err = f.auth.WebSession(ctx, raw); err != nil {
			t.Fatal(err)
		}
		if err := f.auth.EndWebSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		wantCode(t, f.auth.StillSignedIn(ctx, sess), ctalk.EUnauthorized, "sign in again")
	})
}
