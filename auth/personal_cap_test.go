package auth_test

import (
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestPersonalTokenCap: a person holds at most MaxPersonalTokens live
// personal tokens, so a session (or a script driving it) cannot fill the
// database with them; revoking one makes room, and another person is not
// limited by theirs.
func TestPersonalTokenCap(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		bob := &auth.Session{OrgID: "acme", UserID: "bob"}
		var first *auth.Credential
		for i := range auth.MaxPersonalTokens {
			_, cred, err := f.auth.CreatePersonalToken(ctx, bob, "ci", 30)
			if err != nil {
				t.Fatalf("token %d: %v", i, err)
			}
			if first == nil {
				first = cred
			}
		}
		_, _, err := f.auth.CreatePersonalToken(ctx, bob, "one too many", 30)
		wantCode(t, err, ctalk.ERateLimited, "revoke one")
		if _, _, err := f.auth.CreatePersonalToken(ctx, &auth.Session{OrgID: "acme", UserID: "alice"}, "hers", 30); err != nil {
			t.Fatalf("another person's token: %v", err)
		}
		if _, err := f.auth.RevokeCredential(ctx, bob, auth.KindPersonal, first.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.auth.CreatePersonalToken(ctx, bob, "after a revocation", 30); err != nil {
			t.Fatalf("after revoking one: %v", err)
		}
	})
}
