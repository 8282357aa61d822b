package web_test

import (
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/oauth"
	"github.com/ctalk/ctalk/web"
)

// webRoutes lists the web app's routes of method, as it mounts them, so
// that a route added later is covered without a change here.
func webRoutes(t *testing.T, s *site, method string) []string {
	t.Helper()
	e := echo.New()
	web.New(web.Config{Logger: slog.New(slog.DiscardHandler), PublicURL: func(*http.Request) string { return s.URL }},
		web.Services{Auth: s.Auth, Orgs: s.Orgs, OAuth: oauth.NewService(s.DB, s.Auth, oauth.DefaultConfig()), Inbox: s.Inbox, Audit: s.Audit, Slack: s.Slack, SSO: s.SSO, SCIM: s.SCIM}).Mount(e)
	var out []string
	for _, r := range e.Routes() {
		if r.Method == method && !slices.Contains(out, r.Path) {
			out = append(out, r.Path)
		}
	}
	if len(out) < 3 {
		t.Fatalf("the web app has only these %s routes: %v", method, out)
	}
	slices.Sort(out)
	return out
}

// formFields are the names of every field of every form of the app, read
// from its templates.
func formFields(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("templates/*.html")
	parts, _ := filepath.Glob("templates/parts/*.html")
	re := regexp.MustCompile(`\sname="([a-z_]+)"`)
	var out []string
	for _, f := range append(files, parts...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			if m[1] != "csrf" && !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("only these form fields found: %v", out)
	}
	return out
}

// sessionFor is a client with a fresh browser session of the person (made
// without the sign-in form, whose per-address limit a test that signs in
// for every route would reach) and a CSRF cookie.
func sessionFor(t *testing.T, s *site, orgID, userID, role string) *rawClient {
	t.Helper()
	raw, err := s.Auth.StartWebSession(dbtest.Operator(), &auth.Session{OrgID: orgID, UserID: userID, Role: role})
	if err != nil {
		t.Fatal(err)
	}
	c := &rawClient{t: t, base: s.URL, cookies: map[string]*http.Cookie{web.SessionCookie: {Name: web.SessionCookie, Value: raw}}}
	c.do(http.MethodGet, "/signin", nil)
	if c.cookies["ctalk_csrf"] == nil {
		t.Fatal("no CSRF cookie")
	}
	return c
}

// signedIn reports whether c's web session is still live and its CSRF
// cookie still set.
func (c *rawClient) signedIn(s *site) bool {
	cookie := c.cookies[web.SessionCookie]
	if cookie == nil || c.cookies["ctalk_csrf"] == nil {
		return false
	}
	_, err := s.Auth.WebSession(dbtest.Operator(), cookie.Value)
	return err == nil
}

// end ends c's web session, if a request has not already.
func (c *rawClient) end(s *site) {
	c.t.Helper()
	ctx := dbtest.Operator()
	cookie := c.cookies[web.SessionCookie]
	if cookie == nil {
		return
	}
	if sess, err := s.Auth.WebSession(ctx, cookie.Value); err == nil {
		if err := s.Auth.EndWebSession(ctx, sess); err != nil {
			c.t.Fatalf("end the web session: %v", err)
		}
	}
}

// hostile are values no form expects: each is sent in every field.
var hostile = map[string]string{
	"invalid UTF-8": "\xff\xfe\xc3",
	"NUL":           "a\x00b",
	"control":       "\x1b[31m\x07",
	"markup":        `"><script>alert(1)</script>`,
	// Past the 2,000-character limits, in runes and in bytes, yet with
	// every field of the app set to it still under the body limit, so
	// that the forms' own checks read it.
	"long": strings.Repeat("é", 200) + strings.Repeat("a", 1801),
}

// TestFormsTakeHostileInput posts every form of the app (every POST route,
// with every field any form has) with values no person types, and fetches
// every page with them as query parameters and path parameters, on both
// engines: each answer is a page that says what is wrong, never a 500.
func TestFormsTakeHostileInput(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		ctx := dbtest.Operator()
		q, err := s.Inbox.Ask(ctx, acme("bob"), inbox.Ask{To: "alice", Text: "Where is the runbook?"})
		if err != nil {
			t.Fatal(err)
		}
		mine, err := s.Inbox.Ask(ctx, acme("alice"), inbox.Ask{To: "bob", Text: "Can you review?"})
		if err != nil {
			t.Fatal(err)
		}
		fields := formFields(t)
		posts, gets := webRoutes(t, s, http.MethodPost), webRoutes(t, s, http.MethodGet)
		good := map[string]string{"message_id": q.ID, "id": mine.ID, "user_id": "bob", "*": "ctalk.css"}
		for name, v := range hostile {
			params := map[string]string{}
			for k := range good {
				params[k] = v
			}
			for _, ps := range []map[string]string{good, params} {
				// One session for the forms, and a new one after a form
				// that ended it (signing out, a password change), so that
				// each form is posted signed in.
				c := sessionFor(t, s, "acme", "alice", "admin")
				for _, path := range posts {
					form := url.Values{"csrf": {c.cookies["ctalk_csrf"].Value}}
					for _, f := range fields {
						form.Set(f, v)
					}
					u := fillPath(path, ps)
					resp, body := c.do(http.MethodPost, u, form)
					if resp.StatusCode >= 500 || strings.Contains(body, "internal error") {
						t.Errorf("POST %s with %s in every field: %d %s", u, name, resp.StatusCode, body)
					}
					if !c.signedIn(s) {
						c = sessionFor(t, s, "acme", "alice", "admin")
					}
				}
				c.end(s)
				c = sessionFor(t, s, "acme", "alice", "admin")
				query := url.Values{}
				for _, k := range []string{"after", "cursor", "done", "format", "next", "outcome", "since", "to", "tool", "until", "user_id"} {
					query.Set(k, v)
				}
				for _, path := range gets {
					u := fillPath(path, ps) + "?" + query.Encode()
					resp, body := c.do(http.MethodGet, u, nil)
					if resp.StatusCode >= 500 || strings.Contains(body, "internal error") {
						t.Errorf("GET %s with %s: %d %s", u, name, resp.StatusCode, ctalkShort(body))
					}
				}
			}
		}
	})
}

func ctalkShort(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
