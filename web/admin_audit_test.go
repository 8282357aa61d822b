package web_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// auditRows counts the events on an audit page.
func auditRows(page string) int { return strings.Count(page, "<td><time") }

// auditLink returns the href of the page link labelled label, or "".
func auditLink(page, label string) string {
	m := regexp.MustCompile(`<a class="button" href="([^"]+)"[^>]*>` + label + `</a>`).FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// TestAdminAuditLog: the audit page shows the org's events newest first,
// in pages, filtered by person, tool, outcome and time, never another
// org's, and says what is wrong with a bad filter.
func TestAdminAuditLog(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		s.org(t, "globex")
		bob, carol, stranger := s.agent(t, "acme", "bob"), s.agent(t, "acme", "carol"), s.agent(t, "globex", "bob")
		for range 55 {
			testkit.OK(t, bob, "whoami", nil)
		}
		for range 3 {
			testkit.OK(t, carol, "list_users", nil)
			testkit.OK(t, stranger, "whoami", nil)
		}
		alice := s.newClient(t, "acme", "alice")
		testkit.WaitFor(t, 10*time.Second, "the tool calls' audit events", func() (bool, error) {
			var n int
			err := s.DB.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM audit_events WHERE org_id = 'acme'`).Scan(&n)
			return n == 58, err
		})
		alice.post("/admin/members/alice/role", url.Values{"role": {"member"}})
		s.waitAuditEvent(t, "acme", "alice", "web:set_user_role", "conflict", "alice")

		_, first := alice.get("/admin/audit")
		if auditRows(first) != 50 || auditLink(first, "Newest") != "" || !strings.Contains(first[:strings.Index(first, "</tbody>")], "web:set_user_role") {
			t.Fatalf("first page: %d rows, want the 50 newest, the newest first", auditRows(first))
		}
		if i, j := strings.Index(first, "web:set_user_role"), strings.Index(first, "whoami"); i > j {
			t.Error("the newest event is not first")
		}
		older := auditLink(first, "Older events")
		if older == "" {
			t.Fatal("no link to older events")
		}
		_, second := alice.get(older)
		if auditRows(second) != 9 || auditLink(second, "Older events") != "" || auditLink(second, "Newest") == "" {
			t.Fatalf("second page: %d rows, want the 9 oldest and no further page", auditRows(second))
		}
		hour := time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04")
		for _, c := range []struct {
			query string
			want  int
			only  string
		}{
			{"user_id=carol", 3, "list_users"},
			{"user_id=bob&tool=whoami", 50, "whoami"},
			{"outcome=conflict", 1, "web:set_user_role"},
			{"tool=web:set_user_role&outcome=ok", 0, ""},
			{"since=2099-01-01T00:00", 0, ""},
			{"until=2000-01-01T00:00", 0, ""},
			{"since=" + hour + "&user_id=carol", 3, "list_users"},
		} {
			code, page := alice.get("/admin/audit?" + c.query)
			if code != http.StatusOK || auditRows(page) != c.want {
				t.Errorf("%s: %d, %d rows, want %d", c.query, code, auditRows(page), c.want)
			}
			if c.want == 0 && !strings.Contains(page, "No event matches") {
				t.Errorf("%s: no empty state", c.query)
			}
			if c.only != "" && strings.Count(page, "<code>"+c.only+"</code>") != c.want {
				t.Errorf("%s: rows of other tools", c.query)
			}
		}
		if _, err := s.Orgs.RemoveUser(dbtest.Operator(), "acme", "carol"); err != nil {
			t.Fatal(err)
		}
		if _, page := alice.get("/admin/audit?user_id=carol"); auditRows(page) != 3 || !strings.Contains(page, `<option value="carol" selected>carol (not a member now)</option>`) {
			t.Errorf("a former member's events: %d rows, or the filter does not show them", auditRows(page))
		}
		if _, page := alice.get("/admin/audit?user_id=bob&tool=whoami"); !strings.Contains(auditLink(page, "Older events"), "user_id=bob") {
			t.Error("the next page's link drops the filters")
		}
		for _, bad := range []string{"since=yesterday", "outcome=fine", "cursor=abc", "user_id=Not+An+Id"} {
			if code, page := alice.get("/admin/audit?" + bad); code != http.StatusBadRequest || !strings.Contains(page, `class="error"`) {
				t.Errorf("%s: %d, want 400 with the error", bad, code)
			}
		}
	})
}
