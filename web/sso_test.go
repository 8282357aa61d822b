package web_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/outbound"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/sso"
)

const ssoSecret = "client-secret-0123456789abcdef"

// startSSO starts a site that reaches identity providers on loopback over
// http, as the tests run them, and proves email domains at a DNS server of
// its own.
func startSSO(t *testing.T, engine db.Engine, adjust ...func(*app.Wiring)) *site {
	t.Helper()
	dns := testkit.NewDNSServer(t)
	s := start(t, engine, append([]func(*app.Wiring){withSSO(dns)}, adjust...)...)
	s.dns = dns
	return s
}

// withSSO has the server reach identity providers on loopback over http
// and prove domains at dns.
func withSSO(dns *testkit.DNSServer) func(*app.Wiring) {
	return func(w *app.Wiring) {
		w.SSO = sso.Config{HTTP: outbound.Client(outbound.Options{AllowLoopback: true}), AllowHTTP: true, Resolver: dns.Resolver()}
	}
}

// recordShown is the TXT record the admin page shows for a pending domain.
var recordShown = regexp.MustCompile(`(?s)<code>(_ctalk\.[^<]+)</code>.*?<code>TXT</code>.*?<code>(ctalk-verification=[0-9a-f]+)</code>.*?action="(/admin/sso/domains/[^/]+/verify)"`)

// proveDomain has admin add domain on the admin page, publishes the TXT
// record the page shows, and verifies it.
func (s *site) proveDomain(t *testing.T, admin *client, domain string) {
	t.Helper()
	code, body := admin.post("/admin/sso/domains", url.Values{"domain": {domain}})
	m := recordShown.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil || m[1] != "_ctalk."+domain {
		t.Fatalf("adding %s: %d %s", domain, code, body)
	}
	s.dns.SetTXT(m[1], m[2])
	if code, body := admin.post(m[3], url.Values{}); code != http.StatusOK || !strings.Contains(body, "Domain verified") {
		t.Fatalf("verifying %s: %d %s", domain, code, body)
	}
}

// ssoBegin posts the sign-in page's SSO form (or the admin's test form)
// and returns the provider's address the continue page links to.
func ssoBegin(t *testing.T, c *client, path string, form url.Values) string {
	t.Helper()
	code, body := c.post(path, form)
	m := regexp.MustCompile(`href="([^"]+)" id="sso-continue"`).FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("%s: %d %s", path, code, body)
	}
	return html.UnescapeString(m[1])
}

// atProvider opens the provider's address in c's browser and returns the
// callback address the provider sends it back to, without following it.
func atProvider(t *testing.T, c *client, authURL string) string {
	t.Helper()
	h := *c.http
	h.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := h.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("the provider answered %d", resp.StatusCode)
	}
	return resp.Header.Get("Location")
}

// ssoSignIn signs in c through org's provider and returns the final page.
func ssoSignIn(t *testing.T, c *client, org string) (int, string) {
	t.Helper()
	back := atProvider(t, c, ssoBegin(t, c, "/sso/start", url.Values{"org": {org}}))
	resp, err := c.http.Get(back)
	if err != nil {
		t.Fatal(err)
	}
	return read(t, resp)
}

// configureSSO has acme's admin set op up, with the given options.
func configureSSO(t *testing.T, alice *client, op *testkit.OpenIDProvider, extra url.Values) {
	t.Helper()
	form := url.Values{"issuer": {op.URL}, "client_id": {op.ClientID}, "client_secret": {op.ClientSecret}}
	for k, v := range extra {
		form[k] = v
	}
	if code, body := alice.post("/admin/sso", form); code != http.StatusOK || !strings.Contains(body, "Single sign-on saved") {
		t.Fatalf("saving: %d %s", code, body)
	}
}

// TestSSOSignIn: an admin sets up the org's OpenID Connect provider, tests
// it (required is refused before), and requires it; a member then signs
// in through it, by the org's id or their email's domain, stays the same
// member when their email changes at the provider, and can no longer sign
// in with a password, on the web or over MCP; an unverified email links
// nobody; just-in-time provisioning makes a member; an admin's password
// sign-in opens nothing but the passkey verification of the break-glass.
func TestSSOSignIn(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		ctx := dbtest.Operator()
		op := testkit.NewOpenIDProvider(t, "ctalk-acme", ssoSecret)
		s := startSSO(t, engine, func(w *app.Wiring) { w.API.PublicURL = apitest.SelfURL })
		s.org(t, "acme")
		for _, u := range []string{"bob", "carol"} {
			if _, err := s.Orgs.SetEmail(ctx, "acme", u, u+"@acme.test"); err != nil {
				t.Fatal(err)
			}
		}
		alice := s.newClient(t, "acme", "alice")
		if code, body := alice.post("/admin/sso", url.Values{"issuer": {"ftp://x"}, "client_id": {"x"}, "client_secret": {"y"}}); code != http.StatusBadRequest || !strings.Contains(body, "https://") {
			t.Errorf("an issuer of another scheme: %d", code)
		}
		configureSSO(t, alice, op, url.Values{"link_by_email": {"on"}})
		s.proveDomain(t, alice, "acme.test")
		if code, _ := s.newClient(t, "acme", "bob").get("/admin/sso"); code != http.StatusForbidden {
			t.Errorf("a member's GET /admin/sso: %d, want 403", code)
		}
		if code, body := alice.post("/admin/sso/required", url.Values{"required": {"on"}}); code != http.StatusConflict || !strings.Contains(body, "Test sign-in") {
			t.Fatalf("requiring before a test: %d %s", code, body)
		}
		op.SetUser(testkit.OIDCUser{Subject: "idp-alice", Email: "alice@acme.test", EmailVerified: true, Name: "Alice"})
		back := atProvider(t, alice, ssoBegin(t, alice, "/admin/sso/test", url.Values{}))
		if code, body := alice.get(strings.TrimPrefix(back, s.URL)); code != http.StatusOK || !strings.Contains(body, "Test sign-in succeeded") {
			t.Fatalf("the test sign-in: %d %s", code, body)
		}
		// Required: alice's own password session is now a break-glass one,
		// held at its passkey; she signs in through the provider instead,
		// as the test login linked her.
		if code, body := alice.post("/admin/sso/required", url.Values{"required": {"on"}}); code != http.StatusUnauthorized || !strings.Contains(body, "break-glass") {
			t.Fatalf("requiring: %d %s", code, body)
		}
		alice = s.anonymous(t)
		if code, body := ssoSignIn(t, alice, "acme"); code != http.StatusOK || !strings.Contains(body, "alice · acme") {
			t.Fatalf("alice's sign-in through the provider: %d %s", code, body)
		}
		if _, body := alice.get("/admin/sso"); !strings.Contains(body, "Single sign-on is required") {
			t.Fatalf("the admin page after requiring: %s", body)
		}

		// bob, by his email's domain, linked by his verified address.
		op.SetUser(testkit.OIDCUser{Subject: "idp-bob", Email: "bob@acme.test", EmailVerified: true, Name: "Bob"})
		bob := s.anonymous(t)
		code, body := ssoSignIn(t, bob, "bob@acme.test")
		if code != http.StatusOK || !strings.Contains(body, "header") {
			t.Fatalf("bob's sign-in: %d %s", code, body)
		}
		if _, page := bob.get("/profile"); !strings.Contains(page, "bob@acme.test") {
			t.Errorf("bob's profile after SSO does not show bob: %s", page)
		}
		// His address changes at the provider: still bob.
		op.SetUser(testkit.OIDCUser{Subject: "idp-bob", Email: "robert@acme.test", EmailVerified: true, Name: "Robert"})
		bob2 := s.anonymous(t)
		if code, _ := ssoSignIn(t, bob2, "acme"); code != http.StatusOK {
			t.Fatalf("bob's sign-in with a new address: %d", code)
		}
		if _, page := bob2.get("/profile"); !strings.Contains(page, "bob@acme.test") {
			t.Error("an address changed at the provider signed in someone other than bob")
		}
		// Passwords no longer sign members in, on the web or over MCP.
		if code, body := s.anonymous(t).post("/signin", url.Values{"org_id": {"acme"}, "user_id": {"bob"}, "password": {userPW}}); code != http.StatusForbidden || !strings.Contains(body, "requires single sign-on") {
			t.Errorf("bob's password sign-in under sso_required: %d", code)
		}
		// A wrong password answers as anywhere: nobody learns who is admin.
		for _, who := range []string{"alice", "bob"} {
			if code, body := s.anonymous(t).post("/signin", url.Values{"org_id": {"acme"}, "user_id": {who}, "password": {"not-the-password"}}); code != http.StatusUnauthorized || !strings.Contains(body, "login failed") {
				t.Errorf("%s's wrong password under sso_required: %d", who, code)
			}
		}
		if _, _, err := s.Auth.Login(ctx, "acme", "bob", userPW, "127.0.0.1"); ctalk.ErrorCode(err) != ctalk.EForbidden || !strings.Contains(err.Error(), "single sign-on") {
			t.Errorf("bob's MCP login under sso_required: %v", err)
		}
		if _, _, err := s.Auth.Login(ctx, "acme", "alice", userPW, "127.0.0.1"); ctalk.ErrorCode(err) != ctalk.EForbidden {
			t.Errorf("an admin's MCP login under sso_required: %v", err)
		}
		testkit.Fail(t, testkit.Connect(t, s.URL, testkit.EraSessions, ""), "login", map[string]any{"org_id": "acme", "user_id": "bob", "password": userPW},
			"requires single sign-on, so login with a password is refused")
		// An invite's password signs the new member in no more.
		code, body = alice.post("/admin/invites", url.Values{"email": {"dan@acme.test"}, "user_id": {"dan"}, "name": {"Dan"}, "deliver": {"link"}})
		if code != http.StatusOK {
			t.Fatalf("an invite link: %d %s", code, body)
		}
		dan := s.anonymous(t)
		if code, body := dan.post(linkShown(t, body), url.Values{"password": {"dans-password"}, "confirm": {"dans-password"}}); code != http.StatusOK || !strings.Contains(body, "not signed in") {
			t.Errorf("an invite accepted under sso_required: %d %s", code, body)
		}
		if _, page := dan.get("/inbox"); strings.Contains(page, `class="who"`) {
			t.Error("an invite's password signed the member in under sso_required")
		}
		// carol's address is not verified at the provider: linked to nobody.
		op.SetUser(testkit.OIDCUser{Subject: "idp-carol", Email: "carol@acme.test", EmailVerified: false})
		if code, body := ssoSignIn(t, s.anonymous(t), "acme"); code != http.StatusNotFound || !strings.Contains(body, "not linked") {
			t.Errorf("an unverified address: %d %s", code, body)
		}
		// Just in time: dave becomes a member.
		configureSSO(t, alice, op, url.Values{"link_by_email": {"on"}, "jit": {"on"}})
		op.SetUser(testkit.OIDCUser{Subject: "idp-dave", Email: "dave@acme.test", EmailVerified: true, Name: "Dave Doe"})
		if code, _ := ssoSignIn(t, s.anonymous(t), "acme"); code != http.StatusOK {
			t.Fatalf("dave's first sign-in: %d", code)
		}
		if u, err := s.Orgs.User(ctx, "acme", "dave"); err != nil || u.Name != "Dave Doe" || u.Email != "dave@acme.test" {
			t.Errorf("the member made just in time: %+v %v", u, err)
		}
		// Another domain's verified address makes nobody.
		op.SetUser(testkit.OIDCUser{Subject: "idp-eve", Email: "eve@elsewhere.test", EmailVerified: true})
		if code, _ := ssoSignIn(t, s.anonymous(t), "acme"); code != http.StatusNotFound {
			t.Errorf("an address at another domain: %d, want 404", code)
		}
		// Break-glass: alice's password opens only the passkey step.
		glass := s.anonymous(t)
		if code, body := glass.post("/signin", url.Values{"org_id": {"acme"}, "user_id": {"alice"}, "password": {userPW}}); code != http.StatusUnauthorized || !strings.Contains(body, "break-glass") {
			t.Errorf("alice's password sign-in under sso_required: %d", code)
		}
		if code, _ := glass.get("/admin/sso"); code != http.StatusUnauthorized {
			t.Errorf("a break-glass session before its passkey opened the admin page: %d", code)
		}
		time.Sleep(100 * time.Millisecond)
		for _, where := range []string{s.logs.String(), body} {
			if strings.Contains(where, ssoSecret) {
				t.Error("the client secret was shown or logged")
			}
		}
		if _, page := alice.get("/admin/sso"); strings.Contains(page, ssoSecret) {
			t.Error("the admin page shows the client secret")
		}
	})
}

// TestSSORefusals: the callback refuses an ID token for another audience,
// from another issuer, expired, signed with a key the provider does not
// publish, or with another nonce; a state used twice, or brought back by a
// browser that did not begin it; and a code from another org's provider.
// A rotated key is picked up. Each refusal signs nobody in.
func TestSSORefusals(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		ctx := dbtest.Operator()
		op := testkit.NewOpenIDProvider(t, "ctalk-acme", ssoSecret)
		other := testkit.NewOpenIDProvider(t, "ctalk-beta", ssoSecret)
		s := startSSO(t, engine)
		s.org(t, "acme")
		s.org(t, "beta")
		if _, err := s.Orgs.SetEmail(ctx, "acme", "bob", "bob@acme.test"); err != nil {
			t.Fatal(err)
		}
		acme := s.newClient(t, "acme", "alice")
		configureSSO(t, acme, op, url.Values{"link_by_email": {"on"}})
		s.proveDomain(t, acme, "acme.test")
		beta := s.newClient(t, "beta", "alice")
		if code, body := beta.post("/admin/sso", url.Values{"issuer": {other.URL}, "client_id": {other.ClientID}, "client_secret": {ssoSecret}}); code != http.StatusOK {
			t.Fatalf("beta's set-up: %d %s", code, body)
		}
		if code, body := beta.post("/admin/sso/domains", url.Values{"domain": {"acme.test"}}); code != http.StatusConflict || !strings.Contains(body, "another organization") {
			t.Errorf("another org claiming acme's domain: %d", code)
		}
		s.proveDomain(t, beta, "beta.test")
		op.SetUser(testkit.OIDCUser{Subject: "idp-bob", Email: "bob@acme.test", EmailVerified: true})
		other.SetUser(testkit.OIDCUser{Subject: "idp-bob", Email: "bob@acme.test", EmailVerified: true})

		signedOut := func(t *testing.T, c *client) {
			t.Helper()
			if _, body := c.get("/inbox"); strings.Contains(body, `class="who"`) {
				t.Error("a refused sign-in signed someone in")
			}
		}
		for _, tc := range []struct {
			name  string
			fault testkit.OIDCFault
			want  string
		}{
			{"wrong audience", testkit.OIDCFault{Audience: "someone-else"}, "another application"},
			{"wrong issuer", testkit.OIDCFault{Issuer: "https://evil.example"}, "another issuer"},
			{"expired", testkit.OIDCFault{Expired: true}, "expired"},
			{"bad signature", testkit.OIDCFault{ForeignKey: true}, "signature"},
			{"nonce mismatch", testkit.OIDCFault{Nonce: "another-nonce"}, "nonce"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := s.anonymous(t)
				op.Fault(tc.fault)
				code, body := ssoSignIn(t, c, "acme")
				if code != http.StatusUnauthorized || !strings.Contains(body, tc.want) {
					t.Errorf("%d, want 401 saying %q: %s", code, tc.want, body)
				}
				signedOut(t, c)
			})
		}

		t.Run("replayed state", func(t *testing.T) {
			c := s.anonymous(t)
			back := atProvider(t, c, ssoBegin(t, c, "/sso/start", url.Values{"org": {"acme"}}))
			// The attacker's browser holds no state cookie.
			if code, _ := s.anonymous(t).get(strings.TrimPrefix(back, s.URL)); code != http.StatusUnauthorized {
				t.Errorf("a callback in a browser that did not begin it: %d, want 401", code)
			}
			if code, _ := c.get(strings.TrimPrefix(back, s.URL)); code != http.StatusOK {
				t.Fatalf("the sign-in itself: %d", code)
			}
			// The same callback again, with the cookie set once more.
			u, _ := url.Parse(back)
			again := s.anonymous(t)
			again.http.Jar.SetCookies(u, []*http.Cookie{{Name: "ctalk_sso", Value: u.Query().Get("state"), Path: "/"}})
			if code, body := again.get(strings.TrimPrefix(back, s.URL)); code != http.StatusUnauthorized || !strings.Contains(body, "used already") {
				t.Errorf("a state used twice: %d %s", code, body)
			}
			signedOut(t, again)
		})

		t.Run("another org's provider", func(t *testing.T) {
			// A sign-in begun for acme, completed with a code from beta's
			// provider: acme's provider does not know the code.
			c := s.anonymous(t)
			acmeBack, _ := url.Parse(atProvider(t, c, ssoBegin(t, c, "/sso/start", url.Values{"org": {"acme"}})))
			b := s.anonymous(t)
			betaBack, _ := url.Parse(atProvider(t, b, ssoBegin(t, b, "/sso/start", url.Values{"org": {"beta"}})))
			q := acmeBack.Query()
			q.Set("code", betaBack.Query().Get("code"))
			acmeBack.RawQuery = q.Encode()
			if code, _ := c.get(strings.TrimPrefix(acmeBack.String(), s.URL)); code != http.StatusUnauthorized {
				t.Errorf("beta's code at acme's callback: %d, want 401", code)
			}
			signedOut(t, c)
			// beta's provider vouching for bob@acme.test signs in no one
			// of acme: beta links only its own domain's verified addresses,
			// and beta has no such member.
			if code, _ := ssoSignIn(t, s.anonymous(t), "beta"); code != http.StatusNotFound {
				t.Errorf("beta's provider naming an acme address: %d, want 404", code)
			}
		})

		t.Run("rotated key", func(t *testing.T) {
			op.Rotate()
			c := s.anonymous(t)
			if code, body := ssoSignIn(t, c, "acme"); code != http.StatusOK || !strings.Contains(body, "bob · acme") {
				t.Errorf("a sign-in after the provider rotated its key: %d %s", code, body)
			}
		})
	})
}
