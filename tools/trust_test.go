package tools_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// The trust promises of the account tools, tested over real HTTP with the
// official SDK client on both engines and in both protocol eras (one era
// an engine, apitest.EraOf).

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// allRows returns every row of every table of the database as text, so that
// a test can prove a secret is stored nowhere.
func allRows(t *testing.T, d *db.DB) string {
	t.Helper()
	var b strings.Builder
	for _, table := range tables(t, d) {
		b.WriteString(tableRows(t, d, table))
	}
	return b.String()
}

// rawPost sends body to /mcp with the usual MCP headers plus hdr (without
// an Authorization header, the opt-in to anonymous set-up), and returns
// the status, the response headers and the body.
func rawPost(t *testing.T, url string, body io.Reader, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/mcp", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if hdr["Authorization"] == "" {
		// Without a credential, opted in to anonymous set-up, as an agent
		// that registers connects.
		req.Header.Set(ctalk.SetupHeader, "1")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /mcp: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// wantChallenge requires a raw POST with the header "Authorization: bearer"
// to be answered 401 with a Bearer challenge whose message contains want.
func wantChallenge(t *testing.T, e *env, bearer, want string) {
	t.Helper()
	status, h, body := rawPost(t, e.URL, strings.NewReader(initializeBody), map[string]string{"Authorization": bearer})
	if status != http.StatusUnauthorized {
		t.Fatalf("Authorization %.40q: status %d (%s), want 401", bearer, status, body)
	}
	if c := h.Get("WWW-Authenticate"); !strings.HasPrefix(c, "Bearer ") {
		t.Errorf("Authorization %.40q: WWW-Authenticate %q, want a Bearer challenge", bearer, c)
	}
	var msg struct{ Error, Message string }
	if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.Error != "unauthorized" || !strings.Contains(msg.Message, want) {
		t.Errorf("Authorization %.40q: body %s; want error \"unauthorized\" with a message containing %q", bearer, body, want)
	}
}

// setToken sets a time column of the token row.
func setToken(t *testing.T, e *env, raw, column string, at time.Time) {
	t.Helper()
	res, err := dbtest.Exec(e.DB, `UPDATE tokens SET `+column+` = $1 WHERE hash = $2`, at, sha256Hex(raw))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("updated %d token rows, want 1", n)
	}
}

// noSecretsIn fails when s contains any of the secrets.
func noSecretsIn(t *testing.T, where, s string, secrets ...string) {
	t.Helper()
	for _, secret := range secrets {
		if strings.Contains(s, secret) {
			t.Errorf("%s contains the secret %.12q...", where, secret)
		}
	}
}

func TestSecretsAreStoredHashed(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		e.Org(t, era, "a")
		anon := e.Connect(t, era, "")
		// A password of exactly 72 bytes, the longest bcrypt reads.
		pw72 := strings.Repeat("k", 62) + "0123456789"
		ok(t, anon, "register_user", map[string]any{"org_id": "a", "admin_password": adminPW, "user_id": "dan", "name": "Dan", "password": pw72, "ownership": "x"})
		tok := ok(t, anon, "login", map[string]any{"org_id": "a", "user_id": "dan", "password": pw72})["auth_token"].(string)
		bobTok := e.Login(t, anon, "a", "bob")
		ok(t, e.Connect(t, era, bobTok), "whoami", nil)

		for _, raw := range []string{tok, bobTok} {
			secret, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(raw, "ctalk_"))
			if !strings.HasPrefix(raw, "ctalk_") || err != nil || len(secret) < 32 {
				t.Fatalf("token %q: want ctalk_ and at least 32 random bytes, got %d bytes (err %v)", raw, len(secret), err)
			}
			var kind string
			if err := e.DB.QueryRow(dbtest.Operator(), `SELECT kind FROM tokens WHERE hash = $1`, sha256Hex(raw)).Scan(&kind); err != nil {
				t.Errorf("no token row under the SHA-256 of the token: %v", err)
			}
		}

		var adminHash string
		if err := e.DB.QueryRow(dbtest.Operator(), `SELECT admin_password_hash FROM orgs WHERE id = 'a'`).Scan(&adminHash); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(adminHash, "$2") {
			t.Errorf("admin password stored as %q, want bcrypt", adminHash)
		}
		rows, err := e.DB.Query(dbtest.Operator(), `SELECT id, password_hash FROM users`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id, h string
			if err := rows.Scan(&id, &h); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(h, "$2") {
				t.Errorf("password of %s stored as %q, want bcrypt", id, h)
			}
		}
		rows.Close()

		all := allRows(t, e.DB)
		noSecretsIn(t, "the database", all, adminPW, userPW, pw72, tok, bobTok,
			strings.TrimPrefix(tok, "ctalk_"), strings.TrimPrefix(bobTok, "ctalk_"))
		noSecretsIn(t, "the server log", e.Logs.String(), adminPW, userPW, pw72, tok, bobTok)
	})
}

func TestPasswordRules(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		anon := e.Connect(t, era, "")
		fail(t, anon, "register_organization", map[string]any{"org_id": "a", "name": "A", "admin_password": strings.Repeat("a", 11)}, "admin_password must be at least 12 characters (got 11)")
		fail(t, anon, "register_organization", map[string]any{"org_id": "a", "name": "A", "admin_password": strings.Repeat("a", 73)}, "admin_password is 73 bytes; at most 72 bytes are allowed")
		ok(t, anon, "register_organization", map[string]any{"org_id": "a", "name": "A", "admin_password": strings.Repeat("a", 12)})
		admin := strings.Repeat("a", 12)

		user := func(id, pw string) map[string]any {
			return map[string]any{"org_id": "a", "admin_password": admin, "user_id": id, "name": id, "password": pw, "ownership": "x"}
		}
		fail(t, anon, "register_user", user("u7", "1234567"), "password must be at least 8 characters (got 7)")
		fail(t, anon, "register_user", user("u73", strings.Repeat("p", 73)), "password is 73 bytes; at most 72 bytes are allowed")
		// 25 euro signs are 25 characters but 75 bytes.
		fail(t, anon, "register_user", user("ueuro", strings.Repeat("€", 25)), "password is 75 bytes")
		ok(t, anon, "register_user", user("u8", "12345678"))
		pw72 := strings.Repeat("q", 72)
		ok(t, anon, "register_user", user("u72", pw72))

		login := func(pw string) map[string]any {
			return map[string]any{"org_id": "a", "user_id": "u72", "password": pw}
		}
		ok(t, anon, "login", login(pw72))
		// bcrypt reads 72 bytes: were longer passwords passed through, these
		// would log in.
		fail(t, anon, "login", login(pw72+"q"), "login failed")
		fail(t, anon, "login", login(pw72+"anything at all"), "login failed")
		fail(t, anon, "login", login(strings.Repeat("q", 100<<10)), "login failed")
		fail(t, anon, "login", login(pw72[:71]), "login failed")
	})
}

func TestTokenLifetime(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		e.Org(t, era, "a")
		anon := e.Connect(t, era, "")
		live := func(t *testing.T) (string, *mcp.ClientSession) {
			t.Helper()
			tok := e.Login(t, anon, "a", "bob")
			cs := e.Connect(t, era, tok)
			ok(t, cs, "whoami", nil)
			return tok, cs
		}

		t.Run("absolute expiry", func(t *testing.T) {
			tok, cs := live(t)
			setToken(t, e, tok, "expires_at", time.Now().UTC().Add(-time.Second))
			awaitRefused(t, cs)
			refused(t, cs, "whoami")
			wantChallenge(t, e, "Bearer "+tok, "expired at")
			fail(t, anon, "whoami", map[string]any{"auth_token": tok}, "expired at")
		})
		t.Run("idle expiry", func(t *testing.T) {
			tok, cs := live(t)
			setToken(t, e, tok, "last_used_at", time.Now().UTC().Add(-auth.DefaultConfig().IdleTTL-time.Minute))
			awaitRefused(t, cs)
			refused(t, cs, "whoami")
			wantChallenge(t, e, "Bearer "+tok, "unused")
			fail(t, anon, "whoami", map[string]any{"auth_token": tok}, "unused")
		})
		t.Run("use keeps a token alive", func(t *testing.T) {
			tok, cs := live(t)
			almost := time.Now().UTC().Add(-auth.DefaultConfig().IdleTTL + time.Hour)
			setToken(t, e, tok, "last_used_at", almost)
			// The server reads the token again within auth.TokenCacheTTL.
			var at time.Time
			testkit.Poll(dbtest.Operator(), 10*time.Second, 20*time.Millisecond, func() (bool, error) {
				ok(t, cs, "whoami", nil)
				err := e.DB.QueryRow(dbtest.Operator(), `SELECT last_used_at FROM tokens WHERE hash = $1`, sha256Hex(tok)).Scan(&at)
				return err != nil || at.After(almost.Add(time.Hour)), err
			})
			if !at.After(almost.Add(time.Hour)) {
				t.Errorf("last_used_at still %v after calls", at)
			}
		})
		t.Run("logout", func(t *testing.T) {
			tok, cs := live(t)
			other, otherCS := live(t)
			ok(t, cs, "logout", nil)
			refused(t, cs, "whoami")
			wantChallenge(t, e, "Bearer "+tok, "revoked")
			fail(t, anon, "whoami", map[string]any{"auth_token": tok}, "revoked")
			// Only that token: the user's other one still works.
			ok(t, otherCS, "whoami", nil)
			// Logging out by argument works as well.
			ok(t, anon, "logout", map[string]any{"auth_token": other})
			refused(t, otherCS, "whoami")
		})
		t.Run("garbage", func(t *testing.T) {
			tok, _ := live(t)
			unknown, _ := auth.NewToken()
			for _, c := range []struct{ header, want string }{
				{"Bearer garbage", "not a ctalk token"},
				{"Bearer " + tok[:len(tok)-1], "unknown or expired"},
				{"Bearer " + unknown, "not valid"},
				{"Bearer " + strings.Repeat("x", 100<<10), "not a ctalk token"},
				{"Basic " + tok, `must be "Bearer <token>"`},
				{"Bearer", `must be "Bearer <token>"`},
				{tok, `must be "Bearer <token>"`},
			} {
				wantChallenge(t, e, c.header, c.want)
			}
			fail(t, anon, "whoami", map[string]any{"auth_token": "garbage"}, "not a ctalk token")
			fail(t, anon, "whoami", map[string]any{"auth_token": unknown}, "not valid")
			// No credential at all: 401 with the OAuth challenge (see
			// TestAnonymousChallenge).
			refused(t, anon, "whoami")
		})

		all := e.Logs.String()
		noSecretsIn(t, "the server log", all, adminPW, userPW)
		if strings.Contains(all, "ctalk_") {
			t.Error("the server log contains a token")
		}
	})
}

// TestTokenTTLsAreConfigurable shows that the service's configured lifetimes,
// not constants, decide expiry: with lifetimes of a nanosecond, a fresh token
// is dead on its first use.
func TestTokenTTLsAreConfigurable(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			for _, c := range []struct {
				name string
				set  func(*auth.Config)
				want string
			}{
				{"absolute", func(c *auth.Config) { c.TokenTTL = time.Nanosecond }, "expired at"},
				{"idle", func(c *auth.Config) { c.IdleTTL = time.Nanosecond }, "unused"},
			} {
				t.Run(c.name, func(t *testing.T) {
					e := start(t, engine, options{Auth: c.set})
					anon := e.Connect(t, eraStateless, "")
					ok(t, anon, "register_organization", map[string]any{"org_id": "a", "name": "A", "admin_password": adminPW})
					ok(t, anon, "register_user", map[string]any{"org_id": "a", "admin_password": adminPW, "user_id": "bob", "name": "Bob", "password": userPW, "ownership": "x"})
					tok := e.Login(t, anon, "a", "bob")
					fail(t, anon, "whoami", map[string]any{"auth_token": tok}, c.want)
					wantChallenge(t, e, "Bearer "+tok, c.want)
				})
			}
			t.Run("expires_at reports the lifetime", func(t *testing.T) {
				e := start(t, engine, options{Auth: func(c *auth.Config) { c.TokenTTL = 2 * time.Hour }})
				anon := e.Connect(t, eraStateless, "")
				ok(t, anon, "register_organization", map[string]any{"org_id": "a", "name": "A", "admin_password": adminPW})
				ok(t, anon, "register_user", map[string]any{"org_id": "a", "admin_password": adminPW, "user_id": "bob", "name": "Bob", "password": userPW, "ownership": "x"})
				before := time.Now()
				res := ok(t, anon, "login", map[string]any{"org_id": "a", "user_id": "bob", "password": userPW})
				exp, err := time.Parse(time.RFC3339Nano, res["expires_at"].(string))
				if err != nil {
					t.Fatal(err)
				}
				if d := exp.Sub(before); d < 2*time.Hour-time.Minute || d > 2*time.Hour+time.Minute {
					t.Errorf("expires_at is %v after login, want 2h", d)
				}
			})
		})
	}
}

func TestLoginFailuresAreIndistinguishable(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		e.Org(t, era, "a")
		anon := e.Connect(t, era, "")
		var msgs []string
		for _, args := range []map[string]any{
			{"org_id": "nosuchorg", "user_id": "bob", "password": userPW},
			{"org_id": "a", "user_id": "nosuchuser", "password": userPW},
			{"org_id": "a", "user_id": "bob", "password": "wrong password"},
		} {
			msgs = append(msgs, fail(t, anon, "login", args, "login failed"))
		}
		if msgs[0] != msgs[1] || msgs[1] != msgs[2] {
			t.Errorf("login failures differ:\n%s\n%s\n%s", msgs[0], msgs[1], msgs[2])
		}
	})
}

func TestAccountLockout(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		e.Org(t, era, "a")
		anon := e.Connect(t, era, "")
		wrong := map[string]any{"org_id": "a", "user_id": "bob", "password": "wrong password"}
		right := map[string]any{"org_id": "a", "user_id": "bob", "password": userPW}
		for i := 0; i < 10; i++ {
			fail(t, anon, "login", wrong, "login failed")
		}
		msg := fail(t, anon, "login", right, "too many attempts, retry after ")
		if !strings.Contains(msg, "rate limited") {
			t.Errorf("lockout message %q does not say it is rate limited", msg)
		}
		// Other users of the org are not locked out.
		e.Login(t, anon, "a", "carol")
	})
}

// TestLockoutHoldsAcrossServers counts failures on two servers that share a
// database: five on each lock the account on both, which an in-memory count
// would not.
func TestLockoutHoldsAcrossServers(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e1 := start(t, engine)
			e2 := start(t, engine, options{SharedWith: e1})
			e1.Org(t, eraStateless, "a")
			c1, c2 := e1.Connect(t, eraStateless, ""), e2.Connect(t, eraSessions, "")
			wrong := map[string]any{"org_id": "a", "user_id": "bob", "password": "wrong password"}
			for i := 0; i < 5; i++ {
				fail(t, c1, "login", wrong, "login failed")
				fail(t, c2, "login", wrong, "login failed")
			}
			right := map[string]any{"org_id": "a", "user_id": "bob", "password": userPW}
			fail(t, c1, "login", right, "too many attempts, retry after ")
			fail(t, c2, "login", right, "too many attempts, retry after ")
		})
	}
}

func TestClientAddressLimit(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine, options{
				Auth: func(c *auth.Config) { c.IPRate, c.IPBurst = 0.001, 3 },
				API:  func(c *api.Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")} },
			})
			anon := e.Connect(t, eraStateless, "")
			ok(t, anon, "register_organization", map[string]any{"org_id": "a", "name": "A", "admin_password": adminPW})
			for _, u := range []string{"bob", "carol"} {
				ok(t, anon, "register_user", map[string]any{"org_id": "a", "admin_password": adminPW, "user_id": u, "name": u, "password": userPW, "ownership": "x"})
			}
			right := map[string]any{"org_id": "a", "user_id": "bob", "password": userPW}
			// Behind a trusted proxy, the forwarded address is the client's own.
			near := connectAs(t, e, map[string]string{"X-Forwarded-For": "198.51.100.7"})
			for i := 0; i < 3; i++ {
				ok(t, near, "login", right)
			}
			fail(t, near, "login", right, "too many attempts from this address, retry after ")
			fail(t, near, "login", map[string]any{"org_id": "a", "user_id": "carol", "password": userPW}, "too many attempts from this address")
			// Another address has its own budget.
			far := connectAs(t, e, map[string]string{"X-Forwarded-For": "203.0.113.9"})
			for i := 0; i < 3; i++ {
				ok(t, far, "login", right)
			}
			fail(t, far, "login", right, "too many attempts from this address")
			// Attempts the address limit refused count against no account.
			if n := countRows(t, e.DB, `SELECT COUNT(*) FROM login_failures`); n != 0 {
				t.Errorf("%d account failures recorded for address-limited attempts, want 0", n)
			}
		})
	}
}

func TestOrgIsolation(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		a := e.Org(t, era, "a")
		b := e.Org(t, era, "b")
		anon := e.Connect(t, era, "")
		ok(t, anon, "register_user", map[string]any{"org_id": "b", "admin_password": adminPW, "user_id": "dave", "name": "Dave", "password": userPW, "ownership": "b-secrets", "notes": "dave's notes"})

		for _, who := range []string{"alice", "bob"} {
			cs := a[who]
			fail(t, cs, "get_user_profile", map[string]any{"user_id": "dave"}, `user "dave" not found in your organization`)
			// Admin or not, with or without b's admin password, the other org does not exist.
			fail(t, cs, "register_user", map[string]any{"org_id": "b", "user_id": "mole", "name": "Mole", "password": userPW, "ownership": "x"}, `organization "b" not found`)
			fail(t, cs, "register_user", map[string]any{"org_id": "b", "admin_password": adminPW, "user_id": "mole", "name": "Mole", "password": userPW, "ownership": "x"}, `organization "b" not found`)
			fail(t, cs, "register_user", map[string]any{"org_id": " B ", "admin_password": adminPW, "user_id": "mole", "name": "Mole", "password": userPW, "ownership": "x"}, `organization "b" not found`)
			fail(t, cs, "update_user_profile_notes", map[string]any{"org_id": "b", "user_id": "dave", "profile_notes": "pwned"}, `organization "b" not found`)
			fail(t, cs, "update_user_profile_notes", map[string]any{"org_id": "b", "admin_password": adminPW, "user_id": "dave", "profile_notes": "pwned"}, `organization "b" not found`)
		}
		// An admin of a naming a user of b in a's own org finds nobody.
		fail(t, a["alice"], "update_user_profile_notes", map[string]any{"org_id": "a", "user_id": "dave", "profile_notes": "pwned"}, `user "dave" not found`)
		fail(t, a["alice"], "update_user_profile_notes", map[string]any{"org_id": "a", "admin_password": adminPW, "user_id": "dave", "profile_notes": "pwned"}, `user "dave" not found`)

		// The org never comes from arguments.
		fail(t, a["bob"], "whoami", map[string]any{"org_id": "b"}, `unknown argument "org_id"`)
		fail(t, a["bob"], "list_users", map[string]any{"org_id": "b"}, `unknown argument "org_id"`)
		fail(t, a["bob"], "get_user_profile", map[string]any{"org_id": "b", "user_id": "dave"}, `unknown argument "org_id"`)
		fail(t, a["bob"], "update_my_notes", map[string]any{"org_id": "b", "notes": "x"}, `unknown argument "org_id"`)

		for _, c := range []struct {
			cs   *mcp.ClientSession
			org  string
			want string
		}{{a["bob"], "a", "a/alice a/bob a/carol"}, {b["carol"], "b", "b/alice b/bob b/carol b/dave"}} {
			var got []string
			for _, u := range ok(t, c.cs, "list_users", nil)["users"].([]any) {
				m := u.(map[string]any)
				got = append(got, m["org_id"].(string)+"/"+m["user_id"].(string))
			}
			if strings.Join(got, " ") != c.want {
				t.Errorf("list_users in %s = %v, want %s", c.org, got, c.want)
			}
		}
		// The same user id in each org is two people.
		prof := ok(t, b["bob"], "get_user_profile", map[string]any{"user_id": "alice"})["user"].(map[string]any)
		if prof["org_id"] != "b" || prof["name"] != "Alice" {
			t.Errorf("b's bob sees alice as %v", prof)
		}
		ok(t, a["alice"], "update_my_notes", map[string]any{"notes": "alice of a"})
		if n := ok(t, b["bob"], "get_user_profile", map[string]any{"user_id": "alice"})["user"].(map[string]any)["notes"]; n != "" {
			t.Errorf("b's alice has notes %q written by a's alice", n)
		}
		// With a's token in the header, a token of b as an argument is refused,
		// not quietly used as either.
		bTok := e.Login(t, anon, "b", "dave")
		fail(t, a["bob"], "whoami", map[string]any{"auth_token": bTok}, "drop the auth_token argument")

		var notes, profile string
		if err := e.DB.QueryRow(dbtest.Operator(), `SELECT notes, profile_notes FROM users WHERE org_id = 'b' AND id = 'dave'`).Scan(&notes, &profile); err != nil {
			t.Fatal(err)
		}
		users := countRows(t, e.DB, `SELECT COUNT(*) FROM users WHERE id = 'mole'`)
		if notes != "dave's notes" || profile != "" || users != 0 {
			t.Errorf("org b was changed from org a: dave notes %q, profile notes %q, moles %d", notes, profile, users)
		}
	})
}

// TestLogsAreClean runs a whole account flow with failures of every kind and
// reads the server log: no secret, no panic, no 5xx.
func TestLogsAreClean(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		a := e.Org(t, era, "a")
		anon := e.Connect(t, era, "")
		tok := e.Login(t, anon, "a", "bob")
		ok(t, anon, "whoami", map[string]any{"auth_token": tok})
		fail(t, anon, "login", map[string]any{"org_id": "a", "user_id": "bob", "password": userPW + "x"}, "login failed")
		fail(t, anon, "register_user", map[string]any{"org_id": "a", "admin_password": adminPW + "x", "user_id": "z", "name": "Z", "password": userPW, "ownership": "x"}, "wrong")
		ok(t, a["alice"], "update_user_profile_notes", map[string]any{"org_id": "a", "admin_password": adminPW, "user_id": "bob", "profile_notes": "n"})
		wantChallenge(t, e, "Bearer "+tok+"x", "unknown or expired")
		ok(t, anon, "logout", map[string]any{"auth_token": tok})
		wantChallenge(t, e, "Bearer "+tok, "revoked")

		logs := e.Logs.String()
		noSecretsIn(t, "the server log", logs, adminPW, userPW, tok, strings.TrimPrefix(tok, "ctalk_"))
		checkLogs(t, logs)
	})
}

// checkLogs fails on a panic, an error-level line or a 5xx in a server log.
func checkLogs(t *testing.T, logs string) {
	t.Helper()
	if strings.Contains(strings.ToLower(logs), "panic") {
		t.Errorf("the server log mentions a panic:\n%s", logs)
	}
	lines := 0
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var l struct {
			Level  string
			Msg    string
			Status int
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Errorf("log line is not JSON: %s", line)
			continue
		}
		lines++
		if l.Level == "ERROR" || l.Status >= 500 {
			t.Errorf("log line reports a server error: %s", line)
		}
	}
	if lines == 0 {
		t.Error("the server logged nothing; this check proves nothing")
	}
}
