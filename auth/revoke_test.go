package auth_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// tokens logs userID of acme in n times and returns the tokens.
func (f *fixture) tokens(t *testing.T, userID, password string, n int) []string {
	t.Helper()
	var out []string
	for range n {
		tok, _, err := f.auth.Login(dbtest.Operator(), "acme", userID, password, "")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tok)
	}
	return out
}

// wantLive fails the test unless each token authenticates exactly when live.
func (f *fixture) wantLive(t *testing.T, live bool, tokens ...string) {
	t.Helper()
	for i, tok := range tokens {
		_, err := f.auth.Authenticate(dbtest.Operator(), tok)
		if live && err != nil {
			t.Errorf("token %d refused: %v", i, err)
		}
		if !live && ctalk.ErrorCode(err) != ctalk.EUnauthorized {
			t.Errorf("token %d: %v, want it refused", i, err)
		}
	}
}

func TestRevokeUserTokens(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		bob := f.tokens(t, "bob", userPW, 2)
		alice := f.tokens(t, "alice", userPW, 1)
		n, err := f.auth.RevokeUserTokens(ctx, "acme", " BOB ")
		if err != nil || n != 2 {
			t.Fatalf("revoke bob's tokens: %d, %v; want 2", n, err)
		}
		f.wantLive(t, false, bob...)
		f.wantLive(t, true, alice...)
		if n, err := f.auth.RevokeUserTokens(ctx, "acme", "bob"); err != nil || n != 0 {
			t.Errorf("revoking again: %d, %v; want 0", n, err)
		}
		// Bob keeps his password and may log in again.
		f.wantLive(t, true, f.tokens(t, "bob", userPW, 1)...)

		_, err = f.auth.RevokeUserTokens(ctx, "acme", "nobody")
		wantCode(t, err, ctalk.ENotFound, `user "nobody" not found`)
		_, err = f.auth.RevokeUserTokens(ctx, "other", "bob")
		wantCode(t, err, ctalk.ENotFound, `user "bob" not found`)
		_, err = f.auth.RevokeUserTokens(ctx, "acme", "bob smith")
		wantCode(t, err, ctalk.EInvalid, "user_id")
	})
}

func TestChangePassword(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d, func(c *auth.Config) { c.MaxFailures = 3 })
		ctx := dbtest.Operator()
		bob := f.tokens(t, "bob", userPW, 3)
		alice := f.tokens(t, "alice", userPW, 1)
		sess, err := f.auth.Authenticate(ctx, bob[0])
		if err != nil {
			t.Fatal(err)
		}
		const newPW = "a new secret"

		for _, tc := range []struct {
			name, current, next string
			code                ctalk.Code
			want                string
		}{
			{"wrong current password", userPW + "x", newPW, ctalk.EUnauthorized, "current_password is wrong"},
			{"new password of 7", userPW, "1234567", ctalk.EInvalid, "new_password must be at least 8 characters"},
			{"new password of 73 bytes", userPW, strings.Repeat("p", 73), ctalk.EInvalid, "new_password is 73 bytes; at most 72"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := f.auth.ChangePassword(ctx, sess, tc.current, tc.next)
				wantCode(t, err, tc.code, tc.want)
				if strings.Contains(ctalk.ErrorMessage(err), tc.next) || strings.Contains(ctalk.ErrorMessage(err), tc.current) {
					t.Errorf("the error %q echoes a password", ctalk.ErrorMessage(err))
				}
				f.wantLive(t, true, bob...)
			})
		}

		n, err := f.auth.ChangePassword(ctx, sess, userPW, newPW)
		if err != nil || n != 2 {
			t.Fatalf("change password: %d, %v; want the 2 other tokens revoked", n, err)
		}
		f.wantLive(t, true, bob[0])
		f.wantLive(t, false, bob[1:]...)
		f.wantLive(t, true, alice...)
		_, _, err = f.auth.Login(ctx, "acme", "bob", userPW, "")
		wantCode(t, err, ctalk.EUnauthorized, "login failed")
		f.wantLive(t, true, f.tokens(t, "bob", newPW, 1)...)

		// Guessing the current password is throttled like login.
		for range 3 {
			_, err = f.auth.ChangePassword(ctx, sess, "a wrong guess", "another secret")
			wantCode(t, err, ctalk.EUnauthorized, "current_password is wrong")
		}
		_, err = f.auth.ChangePassword(ctx, sess, newPW, "another secret")
		wantCode(t, err, ctalk.ERateLimited, "too many attempts")
	})
}

// TestChangePasswordConcurrently has two agents of one person change the
// password at the same moment, from the same current password, many times:
// exactly one change may win, and the password is the winner's.
func TestChangePasswordConcurrently(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d, func(c *auth.Config) { c.MaxFailures = 1000 })
		ctx := dbtest.Operator()
		current := userPW
		for round := range 20 {
			var sessions [2]*auth.Session
			for i, tok := range f.tokens(t, "bob", current, 2) {
				var err error
				if sessions[i], err = f.auth.Authenticate(ctx, tok); err != nil {
					t.Fatal(err)
				}
			}
			next := [2]string{fmt.Sprintf("round %d first", round), fmt.Sprintf("round %d second", round)}
			var errs [2]error
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Go(func() {
					<-start
					_, errs[i] = f.auth.ChangePassword(ctx, sessions[i], current, next[i])
				})
			}
			close(start)
			wg.Wait()
			winner := -1
			for i, err := range errs {
				switch ctalk.ErrorCode(err) {
				case "":
					if winner >= 0 {
						t.Fatalf("round %d: both changes succeeded; the password is whichever wrote last", round)
					}
					winner = i
				case ctalk.EConflict, ctalk.EUnauthorized:
				default:
					t.Fatalf("round %d: %v", round, err)
				}
			}
			if winner < 0 {
				t.Fatalf("round %d: no change succeeded: %v", round, errs)
			}
			current = next[winner]
			f.wantLive(t, true, f.tokens(t, "bob", current, 1)...)
		}
	})
}

func TestResetPassword(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		bob := f.tokens(t, "bob", userPW, 2)
		const newPW = "reset by alice"
		_, err := f.auth.ResetPassword(ctx, "acme", "bob", "short")
		wantCode(t, err, ctalk.EInvalid, "new_password must be at least 8 characters")
		f.wantLive(t, true, bob...)

		n, err := f.auth.ResetPassword(ctx, "acme", "bob", newPW)
		if err != nil || n != 2 {
			t.Fatalf("reset: %d, %v; want 2 tokens revoked", n, err)
		}
		f.wantLive(t, false, bob...)
		_, _, err = f.auth.Login(ctx, "acme", "bob", userPW, "")
		wantCode(t, err, ctalk.EUnauthorized, "login failed")
		f.wantLive(t, true, f.tokens(t, "bob", newPW, 1)...)

		_, err = f.auth.ResetPassword(ctx, "other", "bob", newPW)
		wantCode(t, err, ctalk.ENotFound, `user "bob" not found`)
		if _, err := f.orgs.RemoveUser(ctx, "acme", "bob"); err != nil {
			t.Fatal(err)
		}
		_, err = f.auth.ResetPassword(ctx, "acme", "bob", newPW)
		wantCode(t, err, ctalk.ENotFound, `user "bob" not found`)
		_, _, err = f.auth.Login(ctx, "acme", "bob", newPW, "")
		wantCode(t, err, ctalk.EUnauthorized, "login failed")
	})
}

func TestChangeAdminPassword(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		const newPW = "a brand new admin secret"
		err := f.auth.ChangeAdminPassword(ctx, "acme", "eleven-char")
		wantCode(t, err, ctalk.EInvalid, "new_admin_password must be at least 12 characters")
		if err := f.auth.ChangeAdminPassword(ctx, "acme", newPW); err != nil {
			t.Fatal(err)
		}
		wantCode(t, f.auth.VerifyAdminPassword(ctx, "acme", adminPW), ctalk.EUnauthorized, "wrong")
		if err := f.auth.VerifyAdminPassword(ctx, "acme", newPW); err != nil {
			t.Errorf("the new admin password: %v", err)
		}
		wantCode(t, f.auth.ChangeAdminPassword(ctx, "other", newPW), ctalk.ENotFound, `organization "other" not found`)
	})
}

// TestRemovedUserTokenRefused covers a login that checked a member's
// password just before the member was removed and stores its token just
// after: the token must not work.
func TestRemovedUserTokenRefused(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		if _, err := f.orgs.RemoveUser(ctx, "acme", "bob"); err != nil {
			t.Fatal(err)
		}
		raw, hash := auth.NewToken()
		now := d.Now()
		if _, err := dbtest.Exec(d, `INSERT INTO tokens (hash, org_id, user_id, kind, created_at, last_used_at, expires_at) VALUES ($1, 'acme', 'bob', 'login', $2, $2, $3)`,
			hash, now, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		f.wantLive(t, false, raw)
		// Removal erases the password: login fails as for an unknown user.
		_, _, err := f.auth.Login(ctx, "acme", "bob", userPW, "")
		wantCode(t, err, ctalk.EUnauthorized, "login failed")
		var n int
		if err := d.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM users WHERE org_id = 'acme' AND id = 'bob' AND password_hash = ''`).Scan(&n); err != nil || n != 1 {
			t.Errorf("bob's password hash is kept after removal (%d, %v)", n, err)
		}
	})
}

// TestRevokeEndsBrowserSessions: revoking a member's tokens, resetting their
// password and changing one's own password end browser sessions as they end
// tokens, except the session the change was made in.
func TestRevokeEndsBrowserSessions(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		session := func(t *testing.T) (string, *auth.Session) {
			t.Helper()
			raw, sess, err := f.auth.SignIn(ctx, "acme", "bob", userPW, "")
			if err != nil {
				t.Fatal(err)
			}
			return raw, sess
		}
		live := func(t *testing.T, raw string, want bool) {
			t.Helper()
			_, err := f.auth.WebSession(ctx, raw)
			if want && err != nil || !want && ctalk.ErrorCode(err) != ctalk.EUnauthorized {
				t.Errorf("web session: %v, want live %v", err, want)
			}
		}
		first, _ := session(t)
		if _, err := f.auth.RevokeUserTokens(ctx, "acme", "bob"); err != nil {
			t.Fatal(err)
		}
		live(t, first, false)

		kept, sess := session(t)
		other, _ := session(t)
		if _, err := f.auth.ChangePassword(ctx, sess, userPW, userPW+"-new"); err != nil {
			t.Fatal(err)
		}
		live(t, kept, true)
		live(t, other, false)
	})
}
