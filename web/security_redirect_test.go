package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/web"
)

// offSite are next= values that would send a browser to another site.
// Browsers drop tabs and line breaks anywhere in a URL and read a
// backslash as a slash, so "/<tab>/evil.example" is "//evil.example".
var offSite = []string{
	"//evil.example", "/\\evil.example", "https://evil.example", "javascript:alert(1)",
	"/\t/evil.example", "/\n/evil.example", "/\r/evil.example", "\t//evil.example",
	"/\t\\evil.example", "/\\\tevil.example", "/\x0b/evil.example", "/\x00/evil.example",
	"/\x7f/evil.example", " //evil.example",
}

// TestNextStaysOnSite: the next= of the sign-in page (signed out and
// signed in), of the sign-in and sign-up forms and of sign-out never sends
// the browser off this site, nor carries a control character in Location.
func TestNextStaysOnSite(t *testing.T) {
	t.Parallel()
	s := start(t, db.SQLite)
	s.org(t, "acme")
	for i, next := range offSite {
		org := "neworg-" + string(rune('a'+i))
		c := sessionFor(t, s, "acme", "bob", "member")
		csrf := c.cookies["ctalk_csrf"].Value
		anon := &rawClient{t: t, base: s.URL, cookies: map[string]*http.Cookie{"ctalk_csrf": c.cookies["ctalk_csrf"]}}
		for _, step := range []struct {
			what string
			req  func() *http.Response
		}{
			{"sign-in page, signed in", func() *http.Response {
				return roundTrip(t, c, http.MethodGet, "/signin?"+url.Values{"next": {next}}.Encode(), nil)
			}},
			{"sign-in form", func() *http.Response {
				return roundTrip(t, anon, http.MethodPost, "/signin", url.Values{"csrf": {csrf}, "org_id": {"acme"}, "user_id": {"carol"},
					"password": {userPW}, "next": {next}})
			}},
			{"sign-up form", func() *http.Response {
				return roundTrip(t, anon, http.MethodPost, "/signup", url.Values{"csrf": {csrf}, "org_id": {org}, "org_name": {"New"}, "approval_mode": {"agent"},
					"admin_password": {adminPW}, "user_id": {"dave"}, "name": {"Dave"}, "password": {userPW}, "next": {next}})
			}},
			// Last: it ends c's session.
			{"sign-out", func() *http.Response {
				return roundTrip(t, c, http.MethodPost, "/signout", url.Values{"csrf": {csrf}, "next": {next}})
			}},
		} {
			what, resp := step.what, step.req()
			loc := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusSeeOther {
				t.Errorf("%s with next %q: %d, want 303", what, next, resp.StatusCode)
				continue
			}
			if u, err := url.Parse(loc); err != nil || u.Host != "" || u.Scheme != "" || !strings.HasPrefix(loc, "/") ||
				strings.HasPrefix(loc, "//") || strings.ContainsAny(loc, "\\") || strings.ContainsFunc(loc, isControl) {
				t.Errorf("%s with next %q: Location %q leaves the site", what, next, loc)
			}
		}
	}
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// roundTrip sends one request with c's cookies and returns the response as
// the server wrote it: Go's client would refuse to read a Location with a
// control character, which is what the test looks for.
func roundTrip(t *testing.T, c *rawClient, method, path string, form url.Values) *http.Response {
	t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, _ := http.NewRequestWithContext(t.Context(), method, c.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, ck := range c.cookies {
		req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	resp.Body.Close()
	for _, ck := range resp.Cookies() {
		if ck.Name == web.SessionCookie && ck.MaxAge >= 0 {
			c.cookies[ck.Name] = ck
		}
	}
	return resp
}
