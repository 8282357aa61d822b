package auth_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

const (
	adminPW = "correct horse battery"
	userPW  = "hunter22-long"
)

// clock is a settable time source for db.DB.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fixture is one database with org "acme", admin "alice" and member "bob".
type fixture struct {
	d     *db.DB
	auth  *auth.Service
	orgs  *orgs.Service
	clock *clock
}

func testConfig() auth.Config {
	cfg := auth.DefaultConfig()
	cfg.BcryptCost = 4
	return cfg
}

func setup(t *testing.T, d *db.DB, adjust ...func(*auth.Config)) *fixture {
	t.Helper()
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	d.Now = c.now
	cfg := testConfig()
	for _, f := range adjust {
		f(&cfg)
	}
	a, err := auth.NewService(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := orgs.NewService(d, a)
	ctx := dbtest.Operator()
	if _, err := o.Register(ctx, orgs.NewOrg{ID: "acme", Name: "Acme", AdminPassword: adminPW}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []orgs.NewUser{
		{ID: "alice", Name: "Alice", Password: userPW, Role: orgs.RoleAdmin},
		{ID: "bob", Name: "Bob", Password: userPW},
	} {
		if _, err := o.AddUser(ctx, "acme", u); err != nil {
			t.Fatal(err)
		}
	}
	return &fixture{d: d, auth: a, orgs: o, clock: c}
}

// wantCode fails the test unless err carries code and its message contains want.
func wantCode(t *testing.T, err error, code ctalk.Code, want string) {
	t.Helper()
	if got := ctalk.ErrorCode(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
	if !strings.Contains(ctalk.ErrorMessage(err), want) {
		t.Fatalf("error message %q does not contain %q", ctalk.ErrorMessage(err), want)
	}
}

func TestPasswordRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, pw string
		min      int
		want     string // "" when the password is acceptable
	}{
		{"admin 11 characters", strings.Repeat("a", 11), auth.MinAdminPasswordLen, "at least 12 characters"},
		{"admin 12 characters", strings.Repeat("a", 12), auth.MinAdminPasswordLen, ""},
		{"user 7 characters", strings.Repeat("a", 7), auth.MinUserPasswordLen, "at least 8 characters"},
		{"user 8 characters", strings.Repeat("a", 8), auth.MinUserPasswordLen, ""},
		{"empty", "", auth.MinUserPasswordLen, "at least 8 characters (got 0)"},
		{"72 bytes", strings.Repeat("a", 72), auth.MinUserPasswordLen, ""},
		{"73 bytes", strings.Repeat("a", 73), auth.MinUserPasswordLen, "is 73 bytes; at most 72 bytes"},
		// 25 three-byte runes: 25 characters but 75 bytes.
		{"multibyte over 72 bytes", strings.Repeat("€", 25), auth.MinUserPasswordLen, "is 75 bytes; at most 72 bytes"},
		{"100 KB", strings.Repeat("p", 100<<10), auth.MinUserPasswordLen, "at most 72 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := auth.ValidatePassword("password", tc.pw, tc.min)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			wantCode(t, err, ctalk.EInvalid, tc.want)
			if !strings.Contains(ctalk.ErrorMessage(err), "password") {
				t.Errorf("message %q does not name the field", ctalk.ErrorMessage(err))
			}
		})
	}
}

func TestPasswordsStoredAsBcrypt(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		setup(t, d)
		var adminHash string
		if err := d.QueryRow(dbtest.Operator(), `SELECT admin_password_hash FROM orgs WHERE id = 'acme'`).Scan(&adminHash); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(adminHash, "$2") || strings.Contains(adminHash, adminPW) {
			t.Errorf("admin password stored as %q, want a bcrypt hash", adminHash)
		}
		rows, err := d.Query(dbtest.Operator(), `SELECT password_hash FROM users`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var h string
			if err := rows.Scan(&h); err != nil {
				t.Fatal(err)
			}
			n++
			if !strings.HasPrefix(h, "$2") || strings.Contains(h, userPW) {
				t.Errorf("user password stored as %q, want a bcrypt hash", h)
			}
		}
		if n != 2 {
			t.Fatalf("%d users, want 2", n)
		}
	})
}

func TestLoginIssuesStrongHashedToken(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		raw, sess, err := f.auth.Login(ctx, " ACME ", "Bob", userPW, "192.0.2.1")
		if err != nil {
			t.Fatal(err)
		}
		if sess.OrgID != "acme" || sess.UserID != "bob" || sess.Role != orgs.RoleMember {
			t.Errorf("session = %+v", sess)
		}
		if !strings.HasPrefix(raw, auth.TokenPrefix) {
			t.Fatalf("token %q lacks the %q prefix", raw, auth.TokenPrefix)
		}
		secret, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(raw, auth.TokenPrefix))
		if err != nil || len(secret) < 32 {
			t.Fatalf("token carries %d random bytes (err %v), want at least 32", len(secret), err)
		}
		sum := sha256.Sum256([]byte(raw))
		wantHash := hex.EncodeToString(sum[:])
		var hash, kind string
		var expires time.Time
		if err := d.QueryRow(dbtest.Operator(), `SELECT hash, kind, expires_at FROM tokens`).Scan(&hash, &kind, &expires); err != nil {
			t.Fatal(err)
		}
		if hash != wantHash {
			t.Errorf("stored hash %q, want the SHA-256 of the token %q", hash, wantHash)
		}
		if strings.Contains(hash, raw) || strings.Contains(hash, raw[len(auth.TokenPrefix):]) {
			t.Error("the tokens table holds the raw token")
		}
		if want := f.clock.now().Add(720 * time.Hour); !expires.Equal(want) {
			t.Errorf("expires_at %v, want %v", expires, want)
		}

		// Two tokens never repeat.
		raw2, _, err := f.auth.Login(ctx, "acme", "bob", userPW, "192.0.2.1")
		if err != nil {
			t.Fatal(err)
		}
		if raw2 == raw {
			t.Error("two logins returned the same token")
		}
	})
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		login := func(t *testing.T) string {
			t.Helper()
			raw, _, err := f.auth.Login(ctx, "acme", "alice", userPW, "")
			if err != nil {
				t.Fatal(err)
			}
			return raw
		}
		lastUsed := func(t *testing.T, raw string) time.Time {
			t.Helper()
			var at time.Time
			if err := d.QueryRow(dbtest.Operator(), `SELECT last_used_at FROM tokens WHERE hash = $1`, auth.HashToken(raw)).Scan(&at); err != nil {
				t.Fatal(err)
			}
			return at
		}

		t.Run("valid", func(t *testing.T) {
			raw := login(t)
			sess, err := f.auth.Authenticate(ctx, raw)
			if err != nil {
				t.Fatal(err)
			}
			if sess.OrgID != "acme" || sess.UserID != "alice" || !sess.IsAdmin() || sess.TokenHash != auth.HashToken(raw) {
				t.Errorf("session = %+v", sess)
			}
		})
		t.Run("malformed", func(t *testing.T) {
			raw := login(t)
			for _, bad := range []string{"", "garbage", "Bearer " + raw, raw + "x", raw[:len(raw)-1], strings.ToUpper(raw), "ctalk_" + strings.Repeat("!", len(raw)-6), strings.Repeat("a", 100<<10)} {
				_, err := f.auth.Authenticate(ctx, bad)
				wantCode(t, err, ctalk.EUnauthorized, "log in again")
			}
		})
		t.Run("one character changed", func(t *testing.T) {
			raw := login(t)
			body := len(auth.TokenPrefix)
			swap := func(i int, c byte) string { b := []byte(raw); b[i] = c; return string(b) }
			other := func(i int) byte {
				if raw[i] == 'A' {
					return 'B'
				}
				return 'A'
			}
			for name, bad := range map[string]string{
				"first character after the prefix": swap(body, other(body)),
				"a middle character":               swap(body+20, other(body+20)),
				"the last character":               swap(len(raw)-1, other(len(raw)-1)),
				"a character outside the alphabet": swap(body+5, '!'),
				"one character cut":                raw[:len(raw)-1],
				"one character added":              raw + "A",
			} {
				_, err := f.auth.Authenticate(ctx, bad)
				if wantCode(t, err, ctalk.EUnauthorized, "unknown or expired"); strings.Contains(ctalk.ErrorMessage(err), "not a ctalk token") {
					t.Errorf("%s: %q, want it answered as unknown, not as another kind of value", name, ctalk.ErrorMessage(err))
				}
			}
			for _, bad := range []string{"garbage", "Ctalk_" + raw[body:], strings.Repeat("a", 100<<10)} {
				_, err := f.auth.Authenticate(ctx, bad)
				wantCode(t, err, ctalk.EUnauthorized, "not a ctalk token (they start with \"ctalk_\")")
			}
		})
		t.Run("unknown well-formed token", func(t *testing.T) {
			raw, _ := auth.NewToken()
			_, err := f.auth.Authenticate(ctx, raw)
			wantCode(t, err, ctalk.EUnauthorized, "not valid")
		})
		t.Run("absolute expiry", func(t *testing.T) {
			raw := login(t)
			// Keep it in use, so that only the absolute limit can end it.
			for i := 0; i < 29; i++ {
				f.clock.advance(24 * time.Hour)
				if _, err := f.auth.Authenticate(ctx, raw); err != nil {
					t.Fatalf("day %d: %v", i+1, err)
				}
			}
			f.clock.advance(24*time.Hour - time.Microsecond)
			if _, err := f.auth.Authenticate(ctx, raw); err != nil {
				t.Fatalf("a microsecond before expiry: %v", err)
			}
			f.clock.advance(time.Microsecond)
			_, err := f.auth.Authenticate(ctx, raw)
			wantCode(t, err, ctalk.EUnauthorized, "expired at")
		})
		t.Run("idle expiry", func(t *testing.T) {
			raw := login(t)
			f.clock.advance(168*time.Hour - time.Microsecond)
			if _, err := f.auth.Authenticate(ctx, raw); err != nil {
				t.Fatalf("just inside the idle limit: %v", err)
			}
			// That use restarted the idle clock.
			if got, want := lastUsed(t, raw), f.clock.now(); !got.Equal(want) {
				t.Fatalf("last_used_at %v, want %v", got, want)
			}
			f.clock.advance(168 * time.Hour)
			_, err := f.auth.Authenticate(ctx, raw)
			wantCode(t, err, ctalk.EUnauthorized, "unused")
		})
		t.Run("last use is refreshed at most once a minute", func(t *testing.T) {
			raw := login(t)
			before := lastUsed(t, raw)
			f.clock.advance(30 * time.Second)
			if _, err := f.auth.Authenticate(ctx, raw); err != nil {
				t.Fatal(err)
			}
			if got := lastUsed(t, raw); !got.Equal(before) {
				t.Errorf("last_used_at moved to %v after 30s, want %v", got, before)
			}
			f.clock.advance(31 * time.Second)
			if _, err := f.auth.Authenticate(ctx, raw); err != nil {
				t.Fatal(err)
			}
			if got := lastUsed(t, raw); !got.Equal(f.clock.now()) {
				t.Errorf("last_used_at %v after 61s, want %v", got, f.clock.now())
			}
		})
		t.Run("logout", func(t *testing.T) {
			raw := login(t)
			other := login(t)
			sess, err := f.auth.Authenticate(ctx, raw)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.auth.Logout(ctx, sess); err != nil {
				t.Fatal(err)
			}
			_, err = f.auth.Authenticate(ctx, raw)
			wantCode(t, err, ctalk.EUnauthorized, "revoked")
			// Logging out twice is harmless; other tokens live on.
			if err := f.auth.Logout(ctx, sess); err != nil {
				t.Fatal(err)
			}
			if _, err := f.auth.Authenticate(ctx, other); err != nil {
				t.Errorf("another token of the same user stopped working: %v", err)
			}
		})
		t.Run("role comes from the user, not the token", func(t *testing.T) {
			raw := login(t)
			if _, err := dbtest.Exec(d, `UPDATE users SET role = 'member' WHERE org_id = 'acme' AND id = 'alice'`); err != nil {
				t.Fatal(err)
			}
			defer dbtest.Exec(d, `UPDATE users SET role = 'admin' WHERE org_id = 'acme' AND id = 'alice'`)
			sess, err := f.auth.Authenticate(ctx, raw)
			if err != nil {
				t.Fatal(err)
			}
			if sess.IsAdmin() {
				t.Error("a demoted admin's token still acts as admin")
			}
		})
	})
}

func TestLoginFailuresLookAlike(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		var msgs []string
		for _, c := range []struct{ org, user, pw string }{
			{"nosuchorg", "bob", userPW},
			{"acme", "nosuchuser", userPW},
			{"acme", "bob", "wrong-password"},
			{"acme", "bob", ""},
		} {
			_, _, err := f.auth.Login(ctx, c.org, c.user, c.pw, "")
			wantCode(t, err, ctalk.EUnauthorized, "login failed")
			msgs = append(msgs, err.Error())
		}
		for _, m := range msgs[1:] {
			if m != msgs[0] {
				t.Errorf("login errors differ: %q and %q", msgs[0], m)
			}
		}
	})
}

func TestLoginRefusesPasswordsBcryptWouldTruncate(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		pw72 := strings.Repeat("x", 62) + "0123456789"
		if len(pw72) != 72 {
			t.Fatal("fixture is not 72 bytes")
		}
		if _, err := f.orgs.AddUser(ctx, "acme", orgs.NewUser{ID: "long", Name: "Long", Password: pw72}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.auth.Login(ctx, "acme", "long", pw72, ""); err != nil {
			t.Fatalf("exact 72-byte password: %v", err)
		}
		// bcrypt reads only 72 bytes, so these would match if passed through.
		for _, longer := range []string{pw72 + "!", pw72 + strings.Repeat("y", 100)} {
			_, _, err := f.auth.Login(ctx, "acme", "long", longer, "")
			wantCode(t, err, ctalk.EUnauthorized, "login failed")
		}
		// Registration refuses them outright.
		_, err := f.orgs.AddUser(ctx, "acme", orgs.NewUser{ID: "longer", Name: "Longer", Password: pw72 + "!"})
		wantCode(t, err, ctalk.EInvalid, "at most 72 bytes")
	})
}

func TestAccountLockout(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		fail := func(t *testing.T, user string, n int) {
			t.Helper()
			for i := 0; i < n; i++ {
				_, _, err := f.auth.Login(ctx, "acme", user, "wrong-password", "")
				wantCode(t, err, ctalk.EUnauthorized, "login failed")
			}
		}

		t.Run("eleventh attempt refused even with the right password", func(t *testing.T) {
			fail(t, "bob", 10)
			_, _, err := f.auth.Login(ctx, "acme", "bob", userPW, "")
			wantCode(t, err, ctalk.ERateLimited, "too many attempts, retry after ")
			var ce *ctalk.Error
			if !errors.As(err, &ce) || ce.RetryAfter <= 0 || ce.RetryAfter > 15*time.Minute {
				t.Errorf("RetryAfter = %v, want within the 15 minute window", ce.RetryAfter)
			}
			// Other accounts are not locked; the id is normalized before counting.
			if _, _, err := f.auth.Login(ctx, "acme", "alice", userPW, ""); err != nil {
				t.Errorf("alice is locked too: %v", err)
			}
			_, _, err = f.auth.Login(ctx, "ACME", " Bob ", userPW, "")
			wantCode(t, err, ctalk.ERateLimited, "too many attempts")

			// A second service on the same database sees the lock.
			other, err := auth.NewService(d, testConfig())
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = other.Login(ctx, "acme", "bob", userPW, "")
			wantCode(t, err, ctalk.ERateLimited, "too many attempts")

			// The lock lifts when the oldest failure leaves the window.
			f.clock.advance(15 * time.Minute)
			if _, _, err := f.auth.Login(ctx, "acme", "bob", userPW, ""); err != nil {
				t.Fatalf("after the window: %v", err)
			}
		})
		t.Run("failures spread beyond the window do not lock", func(t *testing.T) {
			fail(t, "bob", 9)
			f.clock.advance(16 * time.Minute)
			fail(t, "bob", 9)
			if _, _, err := f.auth.Login(ctx, "acme", "bob", userPW, ""); err != nil {
				t.Fatalf("refused after 9 recent failures: %v", err)
			}
		})
		t.Run("success clears the count", func(t *testing.T) {
			f.clock.advance(time.Hour)
			fail(t, "bob", 9)
			if _, _, err := f.auth.Login(ctx, "acme", "bob", userPW, ""); err != nil {
				t.Fatal(err)
			}
			fail(t, "bob", 9)
			if _, _, err := f.auth.Login(ctx, "acme", "bob", userPW, ""); err != nil {
				t.Fatalf("refused after 9 failures since the last success: %v", err)
			}
		})
		t.Run("unknown accounts lock too", func(t *testing.T) {
			for i := 0; i < 10; i++ {
				f.auth.Login(ctx, "acme", "ghost", "wrong-password", "")
			}
			_, _, err := f.auth.Login(ctx, "acme", "ghost", "wrong-password", "")
			wantCode(t, err, ctalk.ERateLimited, "too many attempts")
		})
		t.Run("admin password", func(t *testing.T) {
			for i := 0; i < 10; i++ {
				err := f.auth.VerifyAdminPassword(ctx, "acme", "wrong admin password")
				wantCode(t, err, ctalk.EUnauthorized, "admin password")
			}
			err := f.auth.VerifyAdminPassword(ctx, "acme", adminPW)
			wantCode(t, err, ctalk.ERateLimited, "too many attempts")
			// It is a separate count from the users' logins.
			if _, _, err := f.auth.Login(ctx, "acme", "alice", userPW, ""); err != nil {
				t.Errorf("alice locked by admin password failures: %v", err)
			}
			f.clock.advance(15 * time.Minute)
			if err := f.auth.VerifyAdminPassword(ctx, "acme", adminPW); err != nil {
				t.Errorf("after the window: %v", err)
			}
		})
	})
}

func TestVerifyAdminPassword(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx := dbtest.Operator()
		if err := f.auth.VerifyAdminPassword(ctx, "acme", adminPW); err != nil {
			t.Fatal(err)
		}
		wantCode(t, f.auth.VerifyAdminPassword(ctx, "acme", userPW), ctalk.EUnauthorized, "wrong")
		wantCode(t, f.auth.VerifyAdminPassword(ctx, "acme", adminPW+strings.Repeat("!", 72)), ctalk.EUnauthorized, "wrong")
		wantCode(t, f.auth.VerifyAdminPassword(ctx, "nosuch", adminPW), ctalk.ENotFound, "not found")
	})
}

func TestClientAddressLimit(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d, func(c *auth.Config) { c.IPRate, c.IPBurst = 0.001, 3 })
		ctx := dbtest.Operator()
		for i := 0; i < 3; i++ {
			if _, _, err := f.auth.Login(ctx, "acme", "bob", userPW, "192.0.2.7"); err != nil {
				t.Fatalf("attempt %d: %v", i+1, err)
			}
		}
		_, _, err := f.auth.Login(ctx, "acme", "bob", userPW, "192.0.2.7")
		wantCode(t, err, ctalk.ERateLimited, "too many attempts from this address, retry after ")
		var ce *ctalk.Error
		if !errors.As(err, &ce) || ce.RetryAfter <= 0 {
			t.Errorf("RetryAfter = %v, want > 0", ce.RetryAfter)
		}
		// The address limit counts no account failure.
		var n int
		if err := d.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM login_failures`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%d login failures recorded for refused attempts, want 0", n)
		}
		if _, _, err := f.auth.Login(ctx, "acme", "bob", userPW, "192.0.2.8"); err != nil {
			t.Errorf("another address is limited too: %v", err)
		}
	})
}

func TestTokenShape(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		raw, hash := auth.NewToken()
		if !strings.HasPrefix(raw, auth.TokenPrefix) || !auth.WellFormed(raw) {
			t.Fatalf("token %q is not well formed", raw)
		}
		b, err := base64.RawURLEncoding.DecodeString(raw[len(auth.TokenPrefix):])
		if err != nil || len(b) < 32 {
			t.Fatalf("token %q carries %d bytes (err %v), want at least 32", raw, len(b), err)
		}
		sum := sha256.Sum256([]byte(raw))
		if hash != hex.EncodeToString(sum[:]) || hash != auth.HashToken(raw) {
			t.Fatalf("hash %q is not the hex SHA-256 of the token", hash)
		}
		if seen[raw] {
			t.Fatal("a token repeated")
		}
		seen[raw] = true
	}
}
