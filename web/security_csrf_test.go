package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/slackapp"
	"github.com/ctalk/ctalk/sso"
	"github.com/ctalk/ctalk/web"
)

// unchanged checks that nothing a form of the test could change did.
func unchanged(t *testing.T, s *site, msgID string) {
	t.Helper()
	ctx := dbtest.Operator()
	users, _ := s.Orgs.Users(ctx, "acme")
	org, _ := s.Orgs.Org(ctx, "acme")
	var personal, ended int
	s.DB.QueryRow(ctx, `SELECT COUNT(*) FROM tokens WHERE kind = 'personal'`).Scan(&personal)
	s.DB.QueryRow(ctx, `SELECT COUNT(*) FROM web_sessions WHERE revoked_at IS NOT NULL`).Scan(&ended)
	q, err := s.Inbox.Review(ctx, acme("alice"), msgID)
	for _, u := range users {
		if u.Notes != "" || u.ProfileNotes != "" {
			t.Errorf("refused forms changed %s's notes: %q, %q", u.ID, u.Notes, u.ProfileNotes)
		}
	}
	if err != nil || len(users) != 3 || org.ApprovalMode != orgs.ApprovalAgent || personal != 0 || ended != 0 || q.Status != inbox.StatusPending {
		t.Errorf("refused forms changed something: %d users, mode %s, %d personal tokens, %d sessions ended, question %v %v",
			len(users), org.ApprovalMode, personal, ended, q, err)
	}
}

// TestEveryFormRefusesCrossSitePosts posts to every POST route of the app
// (read from its routes, so a new form is covered without a change here),
// as a signed-in admin and signed out, with every field a form has:
// without the CSRF token, with it but from another site (Sec-Fetch-Site),
// without it from a sibling site, without it with another site's Origin,
// with it in the query string only (where URLs and logs would carry it),
// and without it from this very site (Sec-Fetch-Site same-origin or none,
// which is no pass). Each is refused with 403 and changes nothing.
func TestEveryFormRefusesCrossSitePosts(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		q, err := s.Inbox.Ask(dbtest.Operator(), acme("bob"), inbox.Ask{To: "alice", Text: "Where is the runbook?"})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Inbox.Propose(dbtest.Operator(), acme("alice"), q.ID, "Here."); err != nil {
			t.Fatal(err)
		}
		params := map[string]string{"message_id": q.ID, "id": q.ID, "user_id": "bob"}
		fields := url.Values{"version": {"1"}, "text": {"x"}, "note": {"x"}, "reason": {"x"}, "notes": {"x"}, "profile_notes": {"x"},
			"approval_mode": {"human"}, "role": {"admin"}, "label": {"x"}, "days": {"30"}, "retention_days": {"30"}, "user_id": {"eve"}, "name": {"Eve"},
			"password": {userPW}, "new_password": {userPW + "2"}, "confirm": {userPW + "2"}, "current_password": {userPW},
			"new_admin_password": {adminPW + "2"}, "org_id": {"acme"}, "org_name": {"X"}, "admin_password": {adminPW}, "to": {"bob"}}
		with := func(extra url.Values) url.Values {
			f := url.Values{}
			for k, v := range fields {
				f[k] = v
			}
			for k, v := range extra {
				f[k] = v
			}
			return f
		}
		alice := sessionFor(t, s, "acme", "alice", "admin")
		anon := &rawClient{t: t, base: s.URL, cookies: map[string]*http.Cookie{}}
		anon.do(http.MethodGet, "/signin", nil)
		for _, path := range webRoutes(t, s, http.MethodPost) {
			u := fillPath(path, params)
			if signedElsewhere(path) {
				// Exempt from CSRF, signed by Slack or by the identity
				// provider instead (a SAML response comes as another
				// site's form): a post without that signature, whatever
				// its cookies, is refused.
				for who, c := range map[string]*rawClient{"alice": alice, "signed out": anon} {
					if resp := post(t, c, u, with(nil), nil); resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusBadRequest {
						t.Errorf("POST %s as %s unsigned: %d, want 401 or 400", u, who, resp.StatusCode)
					}
				}
				continue
			}
			for who, c := range map[string]*rawClient{"alice": alice, "signed out": anon} {
				token := c.cookies["ctalk_csrf"].Value
				// A sibling site (another host of the same registrable domain)
				// can set a cookie for this one: it plants a CSRF cookie of its
				// own and posts the same value.
				planted := "planted-" + strings.Repeat("p", 24)
				for what, try := range map[string]struct {
					form    url.Values
					headers map[string]string
					query   string
				}{
					"a planted token, from a sibling site": {with(url.Values{"csrf": {planted}}),
						map[string]string{"Sec-Fetch-Site": "same-site", "Cookie": "ctalk_csrf=" + planted}, ""},
					"no token":                           {with(nil), nil, ""},
					"a wrong token":                      {with(url.Values{"csrf": {strings.Repeat("a", len(token))}}), nil, ""},
					"the token, from another site":       {with(url.Values{"csrf": {token}}), map[string]string{"Sec-Fetch-Site": "cross-site"}, ""},
					"no token, from a sibling site":      {with(nil), map[string]string{"Sec-Fetch-Site": "same-site"}, ""},
					"no token, another Origin":           {with(nil), map[string]string{"Origin": "https://evil.example"}, ""},
					"the token in the query string only": {form: with(nil), query: "?" + url.Values{"csrf": {token}}.Encode()},
					"the token in the query string, from this site": {form: with(nil),
						headers: map[string]string{"Sec-Fetch-Site": "same-origin"}, query: "?" + url.Values{"csrf": {token}}.Encode()},
					"no token, from this site":           {with(nil), map[string]string{"Sec-Fetch-Site": "same-origin"}, ""},
					"no token, typed in the address bar": {with(nil), map[string]string{"Sec-Fetch-Site": "none"}, ""},
				} {
					resp := post(t, c, u+try.query, try.form, try.headers)
					if resp.StatusCode != http.StatusForbidden {
						t.Errorf("POST %s as %s with %s: %d, want 403", u+try.query, who, what, resp.StatusCode)
					}
					for _, ck := range resp.Cookies() {
						if ck.Name == web.SessionCookie {
							t.Errorf("POST %s as %s with %s set or cleared the session cookie", u, who, what)
						}
					}
				}
			}
		}
		unchanged(t, s, q.ID)
		if !signedIn(t, s, alice.cookies[web.SessionCookie].Value) {
			t.Error("refused forms signed alice out")
		}
	})
}

// signedElsewhere says whether path is exempt from CSRF because another
// party's signature is checked instead: the two routes Slack calls
// (slackapp verifies Slack's signature) and SAML's assertion consumer
// service (the identity provider's signed response, bound to the browser's
// own sign-in).
func signedElsewhere(path string) bool {
	return path == slackapp.InteractionsPath || path == slackapp.EventsPath || path == sso.ACSPath
}

// requestRoutes sends GET, and POST with form, to every route of the app
// that keep accepts, its parameters filled from params, as c; each must
// answer want. It returns how many routes it tried.
func requestRoutes(t *testing.T, s *site, c *rawClient, params map[string]string, form url.Values, want int, as string, keep func(path string) bool) int {
	t.Helper()
	var n int
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		for _, path := range webRoutes(t, s, method) {
			if !keep(path) {
				continue
			}
			n++
			u := fillPath(path, params)
			var resp *http.Response
			if method == http.MethodGet {
				resp, _ = c.do(method, u, nil)
			} else {
				resp = post(t, c, u, form, nil)
			}
			if resp.StatusCode != want {
				t.Errorf("%s %s %s: %d, want %d", method, u, as, resp.StatusCode, want)
			}
		}
	}
	return n
}

// post sends a form with c's cookies and extra headers, following no
// redirect.
func post(t *testing.T, c *rawClient, path string, form url.Values, headers map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	for _, ck := range c.cookies {
		req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestAdminRoutesRefuseMembers: every route of the admin section (GET and
// POST, read from the app's routes) and the admin-only profile notes form
// answer a member with their valid session and CSRF token 403, and change
// nothing.
func TestAdminRoutesRefuseMembers(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		q, err := s.Inbox.Ask(dbtest.Operator(), acme("bob"), inbox.Ask{To: "alice", Text: "Where is the runbook?"})
		if err != nil {
			t.Fatal(err)
		}
		bob := sessionFor(t, s, "acme", "bob", "member")
		token := bob.cookies["ctalk_csrf"].Value
		params := map[string]string{"user_id": "carol"}
		form := url.Values{"csrf": {token}, "approval_mode": {"human"}, "role": {"admin"}, "user_id": {"eve"}, "name": {"Eve"},
			"password": {userPW}, "new_password": {userPW + "2"}, "confirm": {userPW + "2"}, "new_admin_password": {adminPW + "2"},
			"profile_notes": {"x"}}
		n := requestRoutes(t, s, bob, params, form, http.StatusForbidden, "as a member", func(path string) bool {
			return strings.HasPrefix(path, "/admin") || path == "/people/:user_id/profile-notes"
		})
		if n < 8 {
			t.Fatalf("only %d admin routes found", n)
		}
		unchanged(t, s, q.ID)
		if u, _ := s.Orgs.User(dbtest.Operator(), "acme", "carol"); u == nil || u.Role != orgs.RoleMember || u.ProfileNotes != "" {
			t.Errorf("carol changed: %+v", u)
		}
	})
}

// TestFormTokenFromBodyOrHeader: a form's CSRF token counts in its body, as
// the pages send it, or in the X-CSRF-Token header, with or without the
// Sec-Fetch-Site of a browser on this site.
func TestFormTokenFromBodyOrHeader(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		bob := sessionFor(t, s, "acme", "bob", "member")
		token := bob.cookies["ctalk_csrf"].Value
		for what, try := range map[string]struct {
			form    url.Values
			headers map[string]string
		}{
			"in the body":                   {url.Values{"csrf": {token}}, nil},
			"in the body, from this site":   {url.Values{"csrf": {token}}, map[string]string{"Sec-Fetch-Site": "same-origin"}},
			"in the header":                 {url.Values{}, map[string]string{"X-CSRF-Token": token}},
			"in the header, from this site": {url.Values{}, map[string]string{"X-CSRF-Token": token, "Sec-Fetch-Site": "same-origin"}},
		} {
			notes := "notes sent with the token " + what
			try.form.Set("notes", notes)
			resp := post(t, bob, "/profile/notes", try.form, try.headers)
			if resp.StatusCode != http.StatusSeeOther {
				t.Errorf("POST /profile/notes with the token %s: %d, want 303", what, resp.StatusCode)
				continue
			}
			if u, _ := s.Orgs.User(dbtest.Operator(), "acme", "bob"); u == nil || u.Notes != notes {
				t.Errorf("POST /profile/notes with the token %s: notes %+v, want %q", what, u, notes)
			}
		}
	})
}
