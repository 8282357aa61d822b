package api_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestFailedLoginsReachTheOrgAuditLog: wrong passwords and the lockout that
// follows are filed under the attacked org and the user tried, where its
// admins can filter them; the password never is.
func TestFailedLoginsReachTheOrgAuditLog(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine, options{Auth: func(c *auth.Config) { c.MaxFailures = 3 }})
			alice := e.Org(t, eraStateless, "a")["alice"]
			anon := e.Connect(t, eraStateless, "")
			const guess = "guessed-password-4711"
			for range 3 {
				fail(t, anon, "login", map[string]any{"org_id": "a", "user_id": "bob", "password": guess}, "login failed")
			}
			fail(t, anon, "login", map[string]any{"org_id": "A", "user_id": "Bob", "password": userPW}, "too many attempts")
			fail(t, anon, "register_user", map[string]any{"org_id": "a", "admin_password": guess, "user_id": "mole", "name": "Mole", "password": userPW, "ownership": "x"}, "admin password")

			failed := auditEvents(t, alice, "a", map[string]any{"tool": "login", "outcome": "unauthorized"}, 3)
			locked := auditEvents(t, alice, "a", map[string]any{"tool": "login", "outcome": "rate_limited"}, 1)
			admin := auditEvents(t, alice, "a", map[string]any{"tool": "register_user", "outcome": "unauthorized"}, 1)
			if len(failed) != 3 || len(locked) != 1 || len(admin) != 1 {
				t.Fatalf("failed logins %v, lockouts %v, admin-password failures %v: want 3, 1 and 1", failed, locked, admin)
			}
			for _, ev := range append(failed, locked...) {
				if ev["org_id"] != "a" || ev["user_id"] != "bob" {
					t.Errorf("event %v: want it under org a and user bob", ev)
				}
			}
			if admin[0]["user_id"] != "admin-password" {
				t.Errorf("admin-password failure recorded as %v", admin[0])
			}
			if byBob := auditEvents(t, alice, "a", map[string]any{"user_id": "bob", "outcome": "rate_limited"}, 1); len(byBob) != 1 {
				t.Errorf("filtering by user: %v", byBob)
			}
			var n int
			e.DB.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM audit_events WHERE org_id LIKE $1 OR user_id LIKE $1 OR ids LIKE $1 OR request_id LIKE $1`, "%"+guess+"%").Scan(&n)
			if n != 0 {
				t.Errorf("%d audit events contain the guessed password", n)
			}
		})
	}
}

// TestConflictingCredentialsAreRefused: a header token and a different
// auth_token argument name two people; the call is refused with what to
// drop. The same token in both is fine.
func TestConflictingCredentialsAreRefused(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		users := e.Org(t, era, "a")
		anon := e.Connect(t, era, "")
		bobTok, aliceTok := e.Login(t, anon, "a", "bob"), e.Login(t, anon, "a", "alice")
		bob := e.Connect(t, era, bobTok)
		fail(t, bob, "whoami", map[string]any{"auth_token": aliceTok}, "drop the auth_token argument")
		fail(t, users["carol"], "list_users", map[string]any{"auth_token": bobTok}, "two different tokens")
		for _, same := range []string{bobTok, " " + bobTok + " "} {
			if who := ok(t, bob, "whoami", map[string]any{"auth_token": same}); who["user"].(map[string]any)["user_id"] != "bob" {
				t.Errorf("whoami with the header's own token as auth_token = %v", who)
			}
		}
		// Without a header, the argument alone still identifies.
		if who := ok(t, anon, "whoami", map[string]any{"auth_token": aliceTok}); who["user"].(map[string]any)["user_id"] != "alice" {
			t.Errorf("whoami with auth_token only = %v", who)
		}
	})
}

// TestClientAddressComesOnlyFromTrustedProxies sends real HTTP requests from
// a loopback peer with forwarded-address headers. The per-address login
// budget (three logins, spent by e.org) shows which address the server took:
// the peer's own, unless the peer is a configured proxy.
func TestClientAddressComesOnlyFromTrustedProxies(t *testing.T) {
	t.Parallel()
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	for _, tc := range []struct {
		name    string
		proxies []netip.Prefix
		header  string
		from    func(client string) map[string]string
		trusted bool
	}{
		{"X-Forwarded-For from an untrusted peer", nil, "", xff, false},
		{"X-Forwarded-For from a loopback peer when only another network is trusted", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, "", xff, false},
		{"X-Forwarded-For from a trusted proxy", loopback, "", xff, true},
		{"X-Real-IP from an untrusted peer", nil, "X-Real-IP", realIP, false},
		{"X-Real-IP from a trusted proxy", loopback, "X-Real-IP", realIP, true},
		{"X-Forwarded-For where X-Real-IP is the header", loopback, "X-Real-IP", xff, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := start(t, db.SQLite, options{
				Auth: func(c *auth.Config) { c.IPRate, c.IPBurst = 0.001, 3 },
				API:  func(c *api.Config) { c.TrustedProxies, c.ClientIPHeader = tc.proxies, tc.header },
			})
			e.Org(t, eraStateless, "a")
			right := map[string]any{"org_id": "a", "user_id": "bob", "password": userPW}
			// e.org logged in three times from the peer address itself, as
			// the request carried no header; each named client now tries once.
			for _, client := range []string{"198.51.100.7", "203.0.113.9"} {
				cs := connectAs(t, e, tc.from(client))
				if tc.trusted {
					ok(t, cs, "login", right)
				} else {
					fail(t, cs, "login", right, "too many attempts from this address")
				}
			}
		})
	}
}

func xff(client string) map[string]string {
	return map[string]string{"X-Forwarded-For": client}
}

func realIP(client string) map[string]string {
	return map[string]string{"X-Real-IP": client}
}

// TestSignupIsBoundedPerAddress: register_organization, which hashes a
// password and on closed servers checks a secret, has a budget per client
// address.
func TestSignupIsBoundedPerAddress(t *testing.T) {
	t.Parallel()
	const secret = "the-operators-signup-secret-0123"
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine, options{
				Auth: func(c *auth.Config) { c.SignupRate, c.SignupBurst = 0.001, 3 },
				API: func(c *api.Config) {
					c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
					c.AllowOrgSignup, c.SignupSecret = false, secret
				},
			})
			org := func(id, secret string) map[string]any {
				return map[string]any{"org_id": id, "name": id, "admin_password": adminPW, "signup_secret": secret}
			}
			t.Run("organizations", func(t *testing.T) {
				cs := connectAs(t, e, xff("198.51.100.1"))
				for _, id := range []string{"o1", "o2", "o3"} {
					ok(t, cs, "register_organization", org(id, secret))
				}
				fail(t, cs, "register_organization", org("o4", secret), "too many attempts from this address")
				ok(t, connectAs(t, e, xff("198.51.100.2")), "register_organization", org("o4", secret))
			})
			t.Run("secret guesses", func(t *testing.T) {
				cs := connectAs(t, e, xff("203.0.113.1"))
				for i := range 3 {
					fail(t, cs, "register_organization", org("g", strings.Repeat("x", i+1)), "signup_secret")
				}
				fail(t, cs, "register_organization", org("g", secret), "too many attempts from this address")
			})
		})
	}
}
