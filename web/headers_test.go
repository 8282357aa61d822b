package web_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/oauth"
	"github.com/ctalk/ctalk/web"
)

// TestSecurityHeadersOnEveryPage fetches every GET route the web app
// registers (read from the routes themselves, so a new page is covered
// without a change here), signed in and signed out, and checks the
// security headers of each answer and that no page carries inline script
// or style, which the policy would block. Over https (PUBLIC_URL), pages
// also carry HSTS and every cookie is Secure.
func TestSecurityHeadersOnEveryPage(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		for _, public := range []string{"", "https://ctalk.example.com"} {
			name := "http"
			if public != "" {
				name = "https"
			}
			t.Run(name, func(t *testing.T) {
				s := start(t, engine, func(w *app.Wiring) { w.API.PublicURL = public })
				s.org(t, "acme")
				q, err := s.Inbox.Ask(dbtest.Operator(), acme("bob"), inbox.Ask{To: "alice", Text: "Where is the runbook?"})
				if err != nil {
					t.Fatal(err)
				}
				params := map[string]string{"id": q.ID, "*": "ctalk.css", "user": "bob", "user_id": "bob"}
				anon := &rawClient{t: t, base: s.URL, cookies: map[string]*http.Cookie{}}
				alice := anon.signIn("acme", "alice")
				for _, path := range webGETRoutes(t, s) {
					u := fillPath(path, params)
					for _, c := range []*rawClient{anon, alice} {
						checkHeaders(t, c, u, public != "")
					}
				}
				for _, ck := range alice.seen {
					if !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Secure != (public != "") {
						t.Errorf("cookie %s: HttpOnly %v, SameSite %v, Secure %v; want HttpOnly, Lax, Secure only over https",
							ck.Name, ck.HttpOnly, ck.SameSite, ck.Secure)
					}
				}
				if alice.seen[web.SessionCookie] == nil && alice.seen["__Host-"+web.SessionCookie] == nil {
					t.Fatal("signing in set no session cookie")
				}
			})
		}
	})
}

// webGETRoutes lists the GET routes of the web app, as it mounts them.
func webGETRoutes(t *testing.T, s *site) []string {
	t.Helper()
	e := echo.New()
	web.New(web.Config{Logger: slog.New(slog.DiscardHandler), PublicURL: func(*http.Request) string { return s.URL }},
		web.Services{Auth: s.Auth, Orgs: s.Orgs, OAuth: oauth.NewService(s.DB, s.Auth, oauth.DefaultConfig()), Inbox: s.Inbox, Audit: s.Audit, SSO: s.SSO, SCIM: s.SCIM}).Mount(e)
	var out []string
	for _, r := range e.Routes() {
		if r.Method == http.MethodGet {
			out = append(out, r.Path)
		}
	}
	if len(out) < 5 {
		t.Fatalf("the web app has only these GET routes: %v", out)
	}
	return out
}

// fill puts a value in each parameter of a route's path: a known one
// where the test has it, else one that names nothing (whose "not found"
// page must carry the headers too).
func fillPath(path string, params map[string]string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		name, isParam := strings.CutPrefix(p, ":")
		if p == "*" {
			name, isParam = "*", true
		}
		if !isParam {
			continue
		}
		v, ok := params[name]
		if !ok {
			v = "unknown"
		}
		parts[i] = url.PathEscape(v)
	}
	return strings.Join(parts, "/")
}

var (
	scriptTag   = regexp.MustCompile(`(?i)<script\b[^>]*>`)
	inlineStyle = regexp.MustCompile(`(?i)<[a-z][^>]*\sstyle\s*=`)
	inlineEvent = regexp.MustCompile(`(?i)<[a-z][^>]*\son[a-z]+\s*=`)
)

// checkHeaders fetches a page and checks its security headers and markup.
func checkHeaders(t *testing.T, c *rawClient, path string, https bool) {
	t.Helper()
	who := "signed out"
	if c.cookie(web.SessionCookie) != nil {
		who = "signed in"
	}
	resp, body := c.do(http.MethodGet, path, nil)
	where := "GET " + path + " (" + who + ")"
	if resp.StatusCode >= 500 {
		t.Errorf("%s: %d", where, resp.StatusCode)
	}
	h := resp.Header
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: CSP %q lacks %q", where, csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-") {
		t.Errorf("%s: CSP %q allows something unsafe", where, csp)
	}
	cache := "no-store"
	if strings.HasPrefix(path, "/static/") && path != "/static/push-worker.js" {
		cache = "no-cache" // a static file without its hash (see TestStaticFilesAreKeptByTheirHash)
	}
	for name, want := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
		"Referrer-Policy": "same-origin", "Cache-Control": cache} {
		if got := h.Get(name); got != want {
			t.Errorf("%s: %s = %q, want %q", where, name, got, want)
		}
	}
	if hsts := h.Get("Strict-Transport-Security"); (hsts != "") != https || https && !strings.Contains(hsts, "max-age=") {
		t.Errorf("%s: Strict-Transport-Security = %q over https %v", where, hsts, https)
	}
	if !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		return
	}
	for _, tag := range scriptTag.FindAllString(body, -1) {
		if !strings.Contains(tag, " src=") {
			t.Errorf("%s: inline script %s", where, tag)
		}
	}
	for _, re := range []*regexp.Regexp{inlineStyle, inlineEvent} {
		if m := re.FindString(body); m != "" {
			t.Errorf("%s: inline style or handler, which the policy blocks: %s", where, m)
		}
	}
}

// rawClient keeps cookies by name whatever their Secure flag (a cookie jar
// would not send Secure ones over the test's plain http), records each
// cookie as it was set, and follows no redirect.
type rawClient struct {
	t       *testing.T
	base    string
	cookies map[string]*http.Cookie
	seen    map[string]*http.Cookie
}

// do sends a request with the client's cookies; a stream's body is read
// for a moment only.
func (c *rawClient) do(method, path string, form url.Values) (*http.Response, string) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(dbtest.Operator())
	defer cancel()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, ck := range c.cookies {
		req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	for _, ck := range resp.Cookies() {
		if c.seen == nil {
			c.seen = map[string]*http.Cookie{}
		}
		if ck.MaxAge < 0 {
			delete(c.cookies, ck.Name)
			continue
		}
		c.cookies[ck.Name], c.seen[ck.Name] = ck, ck
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, ""
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp, string(b)
}

// signIn returns a new client signed in through the sign-in form.
func (c *rawClient) signIn(orgID, userID string) *rawClient {
	c.t.Helper()
	in := &rawClient{t: c.t, base: c.base, cookies: map[string]*http.Cookie{}}
	in.do(http.MethodGet, "/signin", nil)
	csrf := in.cookie("ctalk_csrf")
	if csrf == nil {
		c.t.Fatal("the sign-in page set no CSRF cookie")
	}
	resp, body := in.do(http.MethodPost, "/signin", url.Values{"csrf": {csrf.Value}, "org_id": {orgID}, "user_id": {userID}, "password": {userPW}})
	if resp.StatusCode != http.StatusSeeOther || in.cookie(web.SessionCookie) == nil {
		c.t.Fatalf("sign in as %s/%s: %d %s", orgID, userID, resp.StatusCode, body)
	}
	return in
}

// cookie is the client's cookie of name, under the __Host- prefix it has
// over https or without.
func (c *rawClient) cookie(name string) *http.Cookie {
	if ck := c.cookies["__Host-"+name]; ck != nil {
		return ck
	}
	return c.cookies[name]
}
