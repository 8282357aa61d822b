package auth_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
)

// authenticated fails the test unless tok authenticates, twice (the second
// check is served from the cache), and returns its session.
func authenticated(t *testing.T, a *auth.Service, tok string) *auth.Session {
	t.Helper()
	var sess *auth.Session
	for range 2 {
		var err error
		if sess, err = a.Authenticate(dbtest.Operator(), tok); err != nil {
			t.Fatalf("token refused: %v", err)
		}
	}
	return sess
}

func refused(t *testing.T, a *auth.Service, tok, what string) {
	t.Helper()
	if _, err := a.Authenticate(dbtest.Operator(), tok); ctalk.ErrorCode(err) != ctalk.EUnauthorized {
		t.Errorf("%s: the token still authenticates (%v); want it refused at once", what, err)
	}
}

// TestRevocationIgnoresTheCache checks that every way of revoking a token
// refuses it on the very next call on the same replica, although its check
// was cached (for an hour here, so that only the revocation can end it).
func TestRevocationIgnoresTheCache(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		auth.SetTokenCacheTTL(f.auth, time.Hour)
		ctx := dbtest.Operator()
		pw := userPW
		login := func() string { return f.tokens(t, "bob", pw, 1)[0] }

		tok := login()
		sess := authenticated(t, f.auth, tok)
		if err := f.auth.Logout(ctx, sess); err != nil {
			t.Fatal(err)
		}
		refused(t, f.auth, tok, "logout")

		tok = login()
		authenticated(t, f.auth, tok)
		if _, err := f.auth.RevokeUserTokens(ctx, "acme", "bob"); err != nil {
			t.Fatal(err)
		}
		refused(t, f.auth, tok, "revoke_user_tokens")

		kept, other := login(), login()
		sess = authenticated(t, f.auth, kept)
		authenticated(t, f.auth, other)
		pw = "a-new-password-1"
		if _, err := f.auth.ChangePassword(ctx, sess, userPW, pw); err != nil {
			t.Fatal(err)
		}
		refused(t, f.auth, other, "change_password")
		authenticated(t, f.auth, kept)

		authenticated(t, f.auth, kept)
		pw = "a-new-password-2"
		if _, err := f.auth.ResetPassword(ctx, "acme", "bob", pw); err != nil {
			t.Fatal(err)
		}
		refused(t, f.auth, kept, "reset_password")

		tok = login()
		authenticated(t, f.auth, tok)
		if _, err := f.orgs.RemoveUser(ctx, "acme", "bob"); err != nil {
			t.Fatal(err)
		}
		refused(t, f.auth, tok, "remove_user")
	})
}

// TestCheckDuringRevocationIsNotCached checks that a token check that read
// the token before a revocation committed, and finished after, does not
// leave the revoked token in the cache.
func TestCheckDuringRevocationIsNotCached(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		auth.SetTokenCacheTTL(f.auth, time.Hour)
		tok := f.tokens(t, "bob", userPW, 1)[0]
		read, resume := make(chan struct{}), make(chan struct{})
		var once sync.Once
		auth.AfterTokenRead(f.auth, func() {
			once.Do(func() {
				close(read)
				<-resume
			})
		})
		done := make(chan error)
		go func() {
			_, err := f.auth.Authenticate(dbtest.Operator(), tok)
			done <- err
		}()
		<-read
		if err := f.auth.Logout(dbtest.Operator(), &auth.Session{OrgID: "acme", UserID: "bob", TokenHash: auth.HashToken(tok)}); err != nil {
			t.Fatal(err)
		}
		close(resume)
		if err := <-done; err != nil {
			t.Fatalf("the check that began before the logout: %v; want it to pass", err)
		}
		refused(t, f.auth, tok, "a check after the logout")
	})
}

// TestConcurrentChecksDuringRevocation checks, with concurrent callers of
// one token, that no check that begins after a logout returned passes.
func TestConcurrentChecksDuringRevocation(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		auth.SetTokenCacheTTL(f.auth, time.Hour)
		tok := f.tokens(t, "bob", userPW, 1)[0]
		sess := authenticated(t, f.auth, tok)
		var (
			loggedOut atomic.Bool
			passed    atomic.Int64
			wg        sync.WaitGroup
		)
		for range 8 {
			wg.Go(func() {
				for refusals := 0; refusals < 20; {
					after := loggedOut.Load()
					_, err := f.auth.Authenticate(dbtest.Operator(), tok)
					switch {
					case err == nil && after:
						t.Error("a check that began after the logout passed")
						return
					case err == nil:
						passed.Add(1)
					case ctalk.ErrorCode(err) == ctalk.EUnauthorized:
						refusals++
					default:
						t.Error(err)
						return
					}
				}
			})
		}
		testkit.Poll(dbtest.Operator(), 10*time.Second, time.Millisecond, func() (bool, error) { return passed.Load() >= 100, nil })
		if err := f.auth.Logout(dbtest.Operator(), sess); err != nil {
			t.Fatal(err)
		}
		loggedOut.Store(true)
		wg.Wait()
	})
}

// replicas opens two services on separate pools over one fresh database
// of engine e, as two replicas, with org acme and member bob.
func replicas(t *testing.T, e db.Engine) (a1, a2 *auth.Service, o1 *orgs.Service) {
	t.Helper()
	cfg := dbtest.Config(t, e)
	var services [2]*auth.Service
	for i := range services {
		d, err := db.Open(dbtest.Operator(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		if services[i], err = auth.NewService(d, testConfig()); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			o1 = orgs.NewService(d, services[i])
		}
	}
	ctx := dbtest.Operator()
	if _, err := o1.Register(ctx, orgs.NewOrg{ID: "acme", Name: "Acme", AdminPassword: adminPW}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []orgs.NewUser{{ID: "alice", Name: "Alice", Password: userPW, Role: orgs.RoleAdmin}, {ID: "bob", Name: "Bob", Password: userPW}} {
		if _, err := o1.AddUser(ctx, "acme", u); err != nil {
			t.Fatal(err)
		}
	}
	return services[0], services[1], o1
}

// waitRefused polls until a refuses tok, for at most a generous deadline.
func waitRefused(t *testing.T, a *auth.Service, tok, what string) {
	t.Helper()
	err := testkit.Poll(dbtest.Operator(), 15*time.Second, 10*time.Millisecond, func() (bool, error) {
		_, err := a.Authenticate(dbtest.Operator(), tok)
		return ctalk.ErrorCode(err) == ctalk.EUnauthorized, nil
	})
	if err != nil {
		t.Fatalf("%s: the other replica still accepts the token", what)
	}
}

// TestRevocationReachesOtherReplicas checks, on Postgres, that a revocation
// on one replica reaches another through its notification: the other
// replica's cache keeps entries for an hour here, so only the notification
// can make it refuse the token.
func TestRevocationReachesOtherReplicas(t *testing.T) {
	t.Parallel()
	a1, a2, o1 := replicas(t, db.Postgres)
	auth.SetTokenCacheTTL(a2, time.Hour)
	ctx, cancel := context.WithCancel(dbtest.Operator())
	defer cancel()
	go a2.Listen(ctx, slog.Default())
	if err := testkit.Poll(ctx, 15*time.Second, 10*time.Millisecond, func() (bool, error) { return auth.Listening(a2), nil }); err != nil {
		t.Fatal("the second replica never started listening")
	}

	tok, sess, err := a1.Login(ctx, "acme", "bob", userPW, "")
	if err != nil {
		t.Fatal(err)
	}
	authenticated(t, a2, tok)
	if err := a1.Logout(ctx, sess); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, a2, tok, "logout")

	tok, _, err = a1.Login(ctx, "acme", "bob", userPW, "")
	if err != nil {
		t.Fatal(err)
	}
	authenticated(t, a2, tok)
	if _, err := o1.RemoveUser(ctx, "acme", "bob"); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, a2, tok, "remove_user")
}

// TestLostRevocationNoticeIsBounded checks that a replica that hears no
// revocations (no listener: as if every notification were lost) still
// refuses a revoked token once its cache entry expires, within
// auth.TokenCacheTTL.
func TestLostRevocationNoticeIsBounded(t *testing.T) {
	t.Parallel()
	for _, e := range dbtest.Engines {
		t.Run(string(e), func(t *testing.T) {
			a1, a2, _ := replicas(t, e)
			ctx := dbtest.Operator()
			tok, sess, err := a1.Login(ctx, "acme", "bob", userPW, "")
			if err != nil {
				t.Fatal(err)
			}
			authenticated(t, a2, tok)
			if err := a1.Logout(ctx, sess); err != nil {
				t.Fatal(err)
			}
			waitRefused(t, a2, tok, "logout")
		})
	}
}
