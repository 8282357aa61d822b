package web_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// errorPage checks that an error answer of the app is a page in words for
// a person, with the app's security headers, that says nothing of how the
// server is built.
func errorPage(t *testing.T, where string, resp *http.Response, body string, status int, words string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("%s: %d, want %d", where, resp.StatusCode, status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("%s: Content-Type %q, want a page: %s", where, ct, ctalkShort(body))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("%s: no Content-Security-Policy (%q)", where, csp)
	}
	if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("%s: security headers missing: %v", where, resp.Header)
	}
	if !strings.Contains(body, words) {
		t.Errorf("%s: page does not say %q: %s", where, words, ctalkShort(body))
	}
	for _, leak := range []string{"audit_events", "SQL", "sql", "no such table", "does not exist", "goroutine", ".go:"} {
		if strings.Contains(body, leak) {
			t.Errorf("%s: page shows %q: %s", where, leak, ctalkShort(body))
		}
	}
}

// TestMultipartForms: a form sent as multipart/form-data, as a browser
// sends a form with that enctype, is read like an url-encoded one (its CSRF
// token included), and one over the limit sent without a length is refused
// 413, never read as empty.
func TestMultipartForms(t *testing.T) {
	t.Parallel()
	s := start(t, db.SQLite)
	s.org(t, "acme")
	alice := sessionFor(t, s, "acme", "alice", "admin")
	token := alice.cookies["ctalk_csrf"].Value
	form := func(fields map[string]string) (io.Reader, http.Header) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		for k, v := range fields {
			if err := w.WriteField(k, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		// Not a *strings.Reader: sent without a length.
		return io.MultiReader(&b), http.Header{"Content-Type": {w.FormDataContentType()}}
	}
	body, h := form(map[string]string{"csrf": token, "notes": "multipart notes"})
	if resp, page := alice.post("/profile/notes", body, h); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a multipart form: %d %s", resp.StatusCode, ctalkShort(page))
	}
	u, _, err := s.Orgs.Member(dbtest.Operator(), "acme", "alice")
	if err != nil || u.Notes != "multipart notes" {
		t.Fatalf("notes after the multipart form = %q, %v", u.Notes, err)
	}
	body, h = form(map[string]string{"csrf": token, "notes": strings.Repeat("x", 2<<20)})
	resp, page := alice.post("/profile/notes", body, h)
	errorPage(t, "a multipart form of 2 MB, chunked", resp, page, http.StatusRequestEntityTooLarge, "too large")
}

// TestErrorPagesAreWords: what the app's routes answer when a request
// never reaches its handler, or the handler fails, is a page in words with
// the security headers, never JSON or an internal detail: a form of 2 MB
// on every POST route (413), a post from another site (403), and an
// internal error (500, with the request id to report).
func TestErrorPagesAreWords(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		alice := sessionFor(t, s, "acme", "alice", "admin")
		token := alice.cookies["ctalk_csrf"].Value
		// Just over the limit: each byte more is only more to send.
		huge := url.Values{"csrf": {token}, "text": {strings.Repeat("x", api.MaxBodyBytes+1024)}}
		encoded := huge.Encode()
		posts := webRoutes(t, s, http.MethodPost)
		for _, path := range posts {
			u := fillPath(path, map[string]string{"user_id": "bob"})
			resp, body := alice.do(http.MethodPost, u, huge)
			errorPage(t, "POST "+u+" over the limit", resp, body, http.StatusRequestEntityTooLarge, "too large")
		}
		// The same form sent without a length (chunked): only reading it
		// finds it too large, and it must not be read as an empty form.
		for _, path := range posts {
			u := fillPath(path, map[string]string{"user_id": "bob"})
			resp, body := alice.post(u, io.MultiReader(strings.NewReader(encoded)), nil)
			errorPage(t, "POST "+u+" over the limit, chunked", resp, body, http.StatusRequestEntityTooLarge, "too large")
		}
		resp, body := alice.post("/profile/notes", strings.NewReader(url.Values{"csrf": {token}, "notes": {"x"}}.Encode()),
			http.Header{"Sec-Fetch-Site": {"cross-site"}})
		errorPage(t, "a cross-site post", resp, body, http.StatusForbidden, "did not come from this site")

		// An internal error: the audit log's table is gone.
		dbtest.ExecAsOwner(t, s.DB, `DROP TABLE audit_events`)
		resp, body = alice.do(http.MethodGet, "/admin/audit", nil)
		errorPage(t, "GET /admin/audit without its table", resp, body, http.StatusInternalServerError, "report request "+resp.Header.Get("X-Request-Id"))
	})
}

// post sends a form as body (of unknown length unless a strings.Reader)
// with the client's cookies and the given headers, bare: no redirect
// followed, no cookie kept.
func (c *rawClient) post(path string, body io.Reader, h http.Header) (*http.Response, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.base+path, body)
	if _, ok := body.(*strings.Reader); !ok {
		req.ContentLength = -1
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range h {
		req.Header[k] = v
	}
	for _, ck := range c.cookies {
		req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		c.t.Fatal(err)
	}
	_, text := read(c.t, resp)
	return resp, text
}

// TestUnknownPathsAnswerBrowsersAPage: a browser (Accept: text/html) at a
// path no route serves gets a page in words with the pages' security
// headers; an API client at the same path keeps its JSON. /static/ lists
// no files: a folder is "not found", a file is served.
func TestUnknownPathsAnswerBrowsersAPage(t *testing.T) {
	t.Parallel()
	s := start(t, db.SQLite)
	browserAccept := "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	get := func(path, accept string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, body := read(t, resp)
		return resp, body
	}
	for _, path := range []string{"/no/such/page", "/inboxes", "/static/", "/static/nothing.css", "/static/%ff"} {
		resp, body := get(path, browserAccept)
		errorPage(t, "a browser at "+path, resp, body, http.StatusNotFound, "There is no page at this address")
	}
	resp, body := get("/no/such/page", "application/json")
	if resp.StatusCode != http.StatusNotFound || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || !strings.Contains(body, `"error"`) {
		t.Errorf("an API client at an unknown path: %d %s %s, want a JSON 404", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if resp, body := get("/static/", "*/*"); resp.StatusCode != http.StatusNotFound || strings.Contains(body, `href="ctalk.css"`) {
		t.Errorf("GET /static/: %d, lists %q", resp.StatusCode, body)
	}
	if resp, _ := get("/static/ctalk.css", "text/css,*/*"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /static/ctalk.css: %d, want 200", resp.StatusCode)
	}
}
