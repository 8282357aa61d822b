package api_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/oauth"
)

// browse opens u in browser b and returns the status, headers and page.
func browse(t *testing.T, b *http.Client, u string) (int, http.Header, string) {
	t.Helper()
	resp, err := b.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

// csrfCookie is the CSRF token browser b holds for base, which its forms
// repeat.
func csrfCookie(t *testing.T, b *http.Client, base string) string {
	t.Helper()
	u, _ := url.Parse(base)
	for _, c := range b.Jar.Cookies(u) {
		if c.Name == "ctalk_csrf" {
			return c.Value
		}
	}
	t.Fatal("no CSRF cookie")
	return ""
}

// post submits a form in browser b.
func post(t *testing.T, b *http.Client, u string, form url.Values, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

// newClient registers a client with one redirect URI and returns its id.
func newClient(t *testing.T, base, name, redirect string) string {
	t.Helper()
	status, m := register(t, base, `{"client_name":`+mustJSON(name)+`,"redirect_uris":[`+mustJSON(redirect)+`],"token_endpoint_auth_method":"none"}`)
	if status != http.StatusCreated {
		t.Fatalf("register %s: %d %v", name, status, m)
	}
	return m["client_id"].(string)
}

func TestSignInPage(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine, options{Auth: func(c *auth.Config) { c.MaxFailures = 3 }})
			registerPerson(t, e, "acme", "alice")
			const redirect = "http://127.0.0.1:9911/cb"
			clientID := newClient(t, e.URL, `Agent <script>alert(1)</script>`, redirect)
			_, ch := pkce("page")
			authURL := authorizeURL(e.URL, clientID, redirect, ch, nil)

			t.Run("page", func(t *testing.T) {
				status, h, page := browse(t, browser(t), authURL)
				if status != http.StatusOK {
					t.Fatalf("sign-in page: %d", status)
				}
				if !strings.Contains(page, "Agent &lt;script&gt;alert(1)&lt;/script&gt;") || strings.Contains(page, "<script>") {
					t.Error("the client's name is not shown escaped")
				}
				if !strings.Contains(page, "127.0.0.1:9911") {
					t.Error("the page does not show where the browser returns")
				}
				csp := h.Get("Content-Security-Policy")
				// Only the site's own script files (the passkey sign-in),
				// never inline script.
				if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe") || !strings.Contains(csp, "frame-ancestors 'none'") {
					t.Errorf("Content-Security-Policy %q", csp)
				}
				if h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "same-origin" || h.Get("Cache-Control") != "no-store" {
					t.Errorf("security headers: %v", h)
				}
			})
			t.Run("form without its CSRF token", func(t *testing.T) {
				b := browser(t)
				_, _, page := browse(t, b, authURL)
				form := formFields(page)
				form.Del("csrf")
				form.Set("org_id", "acme")
				form.Set("user_id", "alice")
				form.Set("password", userPW)
				form.Set("action", "signin")
				if status, h, _ := post(t, b, e.URL+oauth.AuthorizePath, form, nil); status != http.StatusBadRequest && status != http.StatusForbidden || h.Get("Location") != "" {
					t.Errorf("sign-in without the CSRF token: %d, Location %q", status, h.Get("Location"))
				}
				form.Set("csrf", formFields(page).Get("csrf"))
				if status, h, _ := post(t, b, e.URL+oauth.AuthorizePath, form, map[string]string{"Sec-Fetch-Site": "cross-site"}); status != http.StatusForbidden || h.Get("Location") != "" {
					t.Errorf("cross-site sign-in: %d, Location %q", status, h.Get("Location"))
				}
			})
			t.Run("session cookie", func(t *testing.T) {
				b := browser(t)
				_, _, page := browse(t, b, authURL)
				form := formFields(page)
				form.Set("org_id", "acme")
				form.Set("user_id", "alice")
				form.Set("password", userPW)
				form.Set("action", "signin")
				resp, err := b.PostForm(e.URL+oauth.AuthorizePath, form)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				var found bool
				for _, c := range resp.Cookies() {
					if c.Name == "ctalk_session" {
						found = true
						if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || !strings.HasPrefix(c.Value, "ctalkweb_") {
							t.Errorf("session cookie %+v", c)
						}
					}
				}
				if !found {
					t.Fatal("no session cookie after sign-in")
				}
			})
			t.Run("consent remembered per person and client", func(t *testing.T) {
				b := browser(t)
				if loc, page := signIn(t, b, authURL, "acme", "alice", userPW); loc == nil || loc.Query().Get("code") == "" {
					t.Fatalf("first sign-in: %v %.200s", loc, page)
				}
				// The same client again: straight back with a code.
				status, h, _ := browse(t, b, authURL)
				if loc, _ := url.Parse(h.Get("Location")); status != http.StatusFound || loc.Query().Get("code") == "" {
					t.Fatalf("same client, signed in: %d %q", status, h.Get("Location"))
				}
				// Another client: asks consent.
				other := newClient(t, e.URL, "Other Agent", redirect)
				otherURL := authorizeURL(e.URL, other, redirect, ch, nil)
				status, _, page := browse(t, b, otherURL)
				if status != http.StatusOK || !strings.Contains(page, "Allow Other Agent to act as me") {
					t.Fatalf("another client: %d %.300s", status, page)
				}
				form := formFields(page)
				form.Set("action", "deny")
				_, h, _ = post(t, b, e.URL+oauth.AuthorizePath, form, nil)
				if loc, _ := url.Parse(h.Get("Location")); loc.Query().Get("error") != "access_denied" || loc.Query().Get("iss") != e.URL {
					t.Errorf("deny: %q", h.Get("Location"))
				}
				form.Set("action", "allow")
				_, h, _ = post(t, b, e.URL+oauth.AuthorizePath, form, nil)
				if loc, _ := url.Parse(h.Get("Location")); loc.Query().Get("code") == "" {
					t.Errorf("allow: %q", h.Get("Location"))
				}
				// Signed out: the page asks for the password again.
				base, _ := url.Parse(e.URL)
				var session *http.Cookie
				for _, c := range b.Jar.Cookies(base) {
					if c.Name == "ctalk_session" {
						session = c
					}
				}
				signout := url.Values{"csrf": {csrfCookie(t, b, e.URL)}, "next": {"/"}}
				if status, _, _ := post(t, b, e.URL+"/signout", signout, nil); status != http.StatusSeeOther {
					t.Fatalf("sign out: %d", status)
				}
				if status, _, page := browse(t, b, otherURL); status != http.StatusOK || !strings.Contains(page, `name="password"`) {
					t.Errorf("after sign-out: %d, no password field", status)
				}
				// The old cookie, replayed, is dead on the server too.
				stale := browser(t)
				stale.Jar.SetCookies(base, []*http.Cookie{session})
				if status, _, page := browse(t, stale, otherURL); status != http.StatusOK || !strings.Contains(page, `name="password"`) {
					t.Errorf("the session cookie replayed after sign-out: %d, no password field", status)
				}
			})
			t.Run("lockout", func(t *testing.T) {
				for range 3 {
					if loc, page := signIn(t, browser(t), authURL, "acme", "alice", "wrong password"); loc != nil || !strings.Contains(page, "login failed") {
						t.Fatalf("wrong password: %v %.200s", loc, page)
					}
				}
				if loc, page := signIn(t, browser(t), authURL, "acme", "alice", userPW); loc != nil || !strings.Contains(page, "too many attempts") {
					t.Errorf("right password on a locked account: %v %.200s", loc, page)
				}
			})
		})
	}
}

// TestSignUpPage creates an organization on the page in the middle of an
// authorization and finishes it as the new admin; with sign-up closed, the
// page refuses as register_organization does.
func TestSignUpPage(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine)
			const redirect = "cursor://anysphere.cursor-retrieval/oauth/user-ctalk/callback"
			status, reg := register(t, e.URL, cursorRegistration)
			if status != http.StatusCreated {
				t.Fatal(reg)
			}
			_, ch := pkce("signup")
			next := strings.TrimPrefix(authorizeURL(e.URL, reg["client_id"].(string), redirect, ch, nil), e.URL)
			b := browser(t)
			_, _, page := browse(t, b, e.URL+"/signup?"+url.Values{"next": {next}}.Encode())
			form := formFields(page)
			for k, v := range map[string]string{"org_id": "newco", "org_name": "New Co", "admin_password": adminPW,
				"user_id": "nina", "name": "Nina", "password": userPW, "ownership": "billing, infra", "approval_mode": "agent"} {
				form.Set(k, v)
			}
			status, h, body := post(t, b, e.URL+"/signup", form, nil)
			if status != http.StatusSeeOther || h.Get("Location") != next {
				t.Fatalf("sign-up: %d %q %.300s", status, h.Get("Location"), body)
			}
			status, _, page = browse(t, b, e.URL+next)
			if status != http.StatusOK || !strings.Contains(page, "nina") {
				t.Fatalf("consent after sign-up: %d %.300s", status, page)
			}
			form = formFields(page)
			form.Set("action", "allow")
			_, h, _ = post(t, b, e.URL+oauth.AuthorizePath, form, nil)
			if loc := h.Get("Location"); !strings.HasPrefix(loc, redirect+"?") || !strings.Contains(loc, "code=") {
				t.Errorf("custom-scheme redirect: %q", loc)
			}
			anon := e.Connect(t, eraStateless, "")
			tok := e.Login(t, anon, "newco", "nina")
			if who := ok(t, e.Connect(t, eraStateless, tok), "whoami", nil); who["user"].(map[string]any)["role"] != "admin" {
				t.Errorf("the person who signed up is not the admin: %v", who)
			}
		})
	}
	t.Run("closed", func(t *testing.T) {
		e := start(t, db.SQLite, options{API: func(c *api.Config) { c.AllowOrgSignup = false }})
		b := browser(t)
		_, _, page := browse(t, b, e.URL+"/signup")
		form := formFields(page)
		for k, v := range map[string]string{"org_id": "newco", "org_name": "New Co", "admin_password": adminPW,
			"user_id": "nina", "name": "Nina", "password": userPW, "approval_mode": "agent"} {
			form.Set(k, v)
		}
		if status, _, body := post(t, b, e.URL+"/signup", form, nil); status != http.StatusForbidden || !strings.Contains(body, "sign-up is closed") {
			t.Errorf("closed sign-up: %d %.300s", status, body)
		}
	})
}
