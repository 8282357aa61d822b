package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

var personalToken = regexp.MustCompile(`ctalk_[A-Za-z0-9_-]{20,}`)

// TestSecretsStayOnTheirPage: the personal token a person creates is on
// the answer to their form only, which no cache may keep and which sends
// no referrer elsewhere; it is in no URL, no log line and no audit record.
// Passwords typed into a refused form (sign-in, sign-up, adding a member,
// changing one's password) are never shown back, logged or audited.
func TestSecretsStayOnTheirPage(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		alice := sessionFor(t, s, "acme", "alice", "admin")
		token := alice.cookies["ctalk_csrf"].Value
		resp, body := alice.do(http.MethodPost, "/tokens", url.Values{"csrf": {token}, "label": {"ci"}, "days": {"30"}})
		raw := personalToken.FindString(body)
		if resp.StatusCode != http.StatusOK || raw == "" {
			t.Fatalf("create a personal token: %d\n%s", resp.StatusCode, body)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("the page with the token: Cache-Control %q, want no-store", cc)
		}
		if rp := resp.Header.Get("Referrer-Policy"); rp != "same-origin" && rp != "no-referrer" {
			t.Errorf("the page with the token: Referrer-Policy %q", rp)
		}
		if loc := resp.Header.Get("Location"); loc != "" {
			t.Errorf("the token's answer redirects to %q", loc)
		}
		for _, attr := range regexp.MustCompile(`(?:href|src|action)="[^"]*"`).FindAllString(body, -1) {
			if strings.Contains(attr, raw) {
				t.Errorf("the token is in a URL: %s", attr)
			}
		}

		const secret = "Sekrit-Passw0rd-Typed-Here"
		anon := &rawClient{t: t, base: s.URL, cookies: map[string]*http.Cookie{"ctalk_csrf": alice.cookies["ctalk_csrf"]}}
		for _, f := range []struct {
			c    *rawClient
			path string
			form url.Values
		}{
			{anon, "/signin", url.Values{"org_id": {"acme"}, "user_id": {"alice"}, "password": {secret}}},
			{anon, "/signup", url.Values{"org_id": {"acme"}, "org_name": {"X"}, "admin_password": {secret}, "user_id": {"x"}, "name": {"X"}, "password": {secret}}},
			{alice, "/admin/members", url.Values{"user_id": {"bob"}, "name": {"Bob"}, "password": {secret}}},
			{alice, "/profile/password", url.Values{"current_password": {secret}, "new_password": {secret}}},
			{alice, "/admin/members/bob/password", url.Values{"new_password": {secret}, "confirm": {secret + "x"}}},
			{alice, "/admin/password", url.Values{"new_admin_password": {secret}, "confirm": {secret + "x"}}},
		} {
			f.form.Set("csrf", token)
			resp, body := f.c.do(http.MethodPost, f.path, f.form)
			if resp.StatusCode < 400 {
				t.Errorf("POST %s was not refused: %d", f.path, resp.StatusCode)
			}
			if strings.Contains(body, secret) {
				t.Errorf("POST %s shows the password typed", f.path)
			}
		}

		// The audit log is written in the background.
		var events []audit.Event
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			p, err := s.Audit.Query(dbtest.Operator(), "acme", audit.Query{})
			if err != nil {
				t.Fatal(err)
			}
			if events = p.Events; len(events) >= 4 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if len(events) == 0 {
			t.Fatal("nothing was audited")
		}
		b, _ := json.Marshal(events)
		logs := s.logs.String()
		for what, v := range map[string]string{"the personal token": raw, "a typed password": secret} {
			if strings.Contains(string(b), v) {
				t.Errorf("%s is in the audit log", what)
			}
			if strings.Contains(logs, v) {
				t.Errorf("%s is in the server's log", what)
			}
		}
	})
}
