package web_test

import (
	"net/http"
	"net/url"
	"testing"

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
				form = url.Values{"csrf": form["csrf"], "org_id": {"fresh"}, "org_name": {"Fresh"}, "admin_password": {adminPW},
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
