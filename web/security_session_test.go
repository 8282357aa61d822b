package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/web"
)

// signedIn says whether a browser session cookie value opens the app.
func signedIn(t *testing.T, s *site, raw string) bool {
	t.Helper()
	c := &rawClient{t: t, base: s.URL, cookies: map[string]*http.Cookie{web.SessionCookie: {Name: web.SessionCookie, Value: raw}}}
	resp, _ := c.do(http.MethodGet, "/inbox", nil)
	return resp.StatusCode == http.StatusOK
}

// TestSignInEndsTheEarlierSession: signing in (or creating an
// organization) on a browser that holds a session gives it a new session
// cookie and ends the one it held, which nothing would use or end
// otherwise; a cookie value the browser was given by someone else is never
// kept. Signing out ends the session on the server, not only in the
// browser.
func TestSignInEndsTheEarlierSession(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		for _, how := range []string{"sign-in", "sign-up"} {
			c := sessionFor(t, s, "acme", "alice", "admin")
			before := c.cookies[web.SessionCookie].Value
			form := url.Values{"csrf": {c.cookies["ctalk_csrf"].Value}, "org_id": {"acme"}, "user_id": {"bob"}, "password": {userPW}}
			path := "/signin"
			if how == "sign-up" {
				path = "/signup"
				form = url.Values{"csrf": form["csrf"], "org_id": {"fresh"}, "org_name": {"Fresh"}, "admin_password": {adminPW}, "approval_mode": {"agent"},
					"user_id": {"dave"}, "name": {"Dave"}, "password": {userPW}}
			}
			resp, body := c.do(http.MethodPost, path, form)
			after := c.cookies[web.SessionCookie]
			if resp.StatusCode != http.StatusSeeOther || after == nil || after.Value == before {
				t.Fatalf("%s over a session: %d, cookie %v\n%s", how, resp.StatusCode, after, body)
			}
			if signedIn(t, s, before) {
				t.Errorf("%s over alice's session left that session open", how)
			}
			if !signedIn(t, s, after.Value) {
				t.Errorf("%s: the new session does not open the app", how)
			}
		}

		// A cookie planted before sign-in is replaced.
		c := &rawClient{t: t, base: s.URL, cookies: map[string]*http.Cookie{web.SessionCookie: {Name: web.SessionCookie, Value: "ctalk_s_planted"}}}
		in := c.signIn("acme", "carol")
		if v := in.cookies[web.SessionCookie].Value; v == "ctalk_s_planted" {
			t.Error("sign-in kept the cookie value it was given")
		}
		// Signing out ends the session on the server.
		raw := in.cookies[web.SessionCookie].Value
		if resp, _ := in.do(http.MethodPost, "/signout", url.Values{"csrf": {in.cookies["ctalk_csrf"].Value}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign out: %d", resp.StatusCode)
		}
		if signedIn(t, s, raw) {
			t.Error("the cookie of a signed-out session still opens the app")
		}
	})
}

// TestCookiesOverHTTPSAreHostOnly: over https (PUBLIC_URL), the session and
// CSRF cookies carry the __Host- prefix, which browsers let only this host
// set: a sibling host of the same domain can set cookies for this one,
// but not these. So a session cookie it plants (its own account, to have
// the person work in it) is not read, nor is a CSRF cookie it plants to
// match a forged form (for browsers that send no Sec-Fetch-Site).
func TestCookiesOverHTTPSAreHostOnly(t *testing.T) {
	t.Parallel()
	s := start(t, db.SQLite, func(w *app.Wiring) { w.API.PublicURL = "https://ctalk.example.com" })
	s.org(t, "acme")
	c := &rawClient{t: t, base: s.URL, cookies: map[string]*http.Cookie{}}
	c.do(http.MethodGet, "/signin", nil)
	csrf := c.cookies["__Host-ctalk_csrf"]
	if csrf == nil || !csrf.Secure || csrf.Path != "/" || csrf.Domain != "" {
		t.Fatalf("CSRF cookie over https: %+v (all: %v)", csrf, c.seen)
	}
	resp, _ := c.do(http.MethodPost, "/signin", url.Values{"csrf": {csrf.Value}, "org_id": {"acme"}, "user_id": {"bob"}, "password": {userPW}})
	sess := c.cookies["__Host-"+web.SessionCookie]
	if resp.StatusCode != http.StatusSeeOther || sess == nil || !sess.Secure || sess.Path != "/" || sess.Domain != "" {
		t.Fatalf("sign-in over https: %d, session cookie %+v", resp.StatusCode, sess)
	}
	// The attacker's own session, planted under the name a sibling host
	// can set, opens nothing.
	raw, err := s.Auth.StartWebSession(t.Context(), &auth.Session{OrgID: "acme", UserID: "carol", Role: "member"})
	if err != nil {
		t.Fatal(err)
	}
	planted := &rawClient{t: t, base: s.URL, cookies: map[string]*http.Cookie{web.SessionCookie: {Name: web.SessionCookie, Value: raw}}}
	if resp, _ := planted.do(http.MethodGet, "/inbox", nil); resp.StatusCode == http.StatusOK {
		t.Error("a session cookie without the __Host- prefix opens the app over https")
	}
	// A planted CSRF cookie and the same value in a forged form.
	victim := &rawClient{t: t, base: s.URL, cookies: map[string]*http.Cookie{"__Host-" + web.SessionCookie: sess,
		"ctalk_csrf": {Name: "ctalk_csrf", Value: strings.Repeat("p", 32)}}}
	if resp, _ := victim.do(http.MethodPost, "/profile/notes", url.Values{"csrf": {strings.Repeat("p", 32)}, "notes": {"forged"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a forged form with a planted CSRF cookie: %d, want 403", resp.StatusCode)
	}
}
