package web_test

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
)

// download fetches path as c and returns the status, headers and body.
func (c *client) download(path string) (int, http.Header, string) {
	c.t.Helper()
	resp, err := c.http.Get(c.base + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// TestAdminAuditExport: an admin downloads the org's events that the
// audit page's filters select, as JSON Lines and as CSV, over real HTTP,
// never another org's; a member is refused; a bad format or filter is
// a 400 that says what is wrong; and each export is itself recorded.
func TestAdminAuditExport(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		s.org(t, "globex")
		bob, carol, stranger := s.agent(t, "acme", "bob"), s.agent(t, "acme", "carol"), s.agent(t, "globex", "alice")
		for range 30 {
			testkit.OK(t, bob, "whoami", nil)
			testkit.OK(t, stranger, "whoami", nil)
		}
		for range 4 {
			testkit.OK(t, carol, "list_users", nil)
		}
		testkit.WaitFor(t, 10*time.Second, "the tool calls' audit events", func() (bool, error) {
			var n int
			err := s.DB.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM audit_events WHERE org_id IN ('acme', 'globex')`).Scan(&n)
			return n == 64, err
		})
		alice := s.newClient(t, "acme", "alice")

		code, h, body := alice.download("/admin/audit/export?format=jsonl")
		if code != http.StatusOK || h.Get("Content-Type") != "application/x-ndjson" || !strings.Contains(h.Get("Content-Disposition"), `attachment; filename="audit-acme-`) {
			t.Fatalf("export: %d %q %q", code, h.Get("Content-Type"), h.Get("Content-Disposition"))
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("the download's headers: %v, want nosniff, no-store and the policy", h)
		}
		var lines []map[string]any
		sc := bufio.NewScanner(strings.NewReader(body))
		for sc.Scan() {
			var e map[string]any
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			lines = append(lines, e)
		}
		if len(lines) != 34 {
			t.Fatalf("%d events exported, want acme's 34", len(lines))
		}
		var last float64
		for _, e := range lines {
			if e["org_id"] != "acme" {
				t.Fatalf("another org's event exported: %v", e)
			}
			if id := e["id"].(float64); id <= last {
				t.Fatal("the export is not oldest first")
			} else {
				last = id
			}
			if e["hash"] == "" || e["seq"] == nil {
				t.Fatalf("an event without its place in the chain: %v", e)
			}
		}

		code, h, body = alice.download("/admin/audit/export?format=csv&user_id=carol&tool=list_users")
		rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
		if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/csv") || err != nil {
			t.Fatalf("csv export: %d %q %v", code, h.Get("Content-Type"), err)
		}
		if len(rows) != 5 || rows[0][0] != "id" || rows[1][3] != "carol" || rows[4][4] != "list_users" {
			t.Fatalf("csv export of carol's calls: %v, want a header and her 4 rows", rows)
		}
		if _, _, body := alice.download("/admin/audit/export?format=csv&since=2099-01-01T00:00"); strings.Count(body, "\n") != 1 {
			t.Errorf("an export of no event: %q, want the header alone", body)
		}

		for q, want := range map[string]string{"format=xml": "jsonl or csv", "": "format is missing", "format=csv&since=yesterday": "since", "format=jsonl&outcome=fine": "outcome"} {
			if code, page := alice.get("/admin/audit/export?" + q); code != http.StatusBadRequest || !strings.Contains(page, `id="export-error"`) || !strings.Contains(page, want) {
				t.Errorf("export with %q: %d, want 400 saying %q", q, code, want)
			}
		}
		member := s.newClient(t, "acme", "bob")
		if code, page := member.get("/admin/audit/export?format=jsonl"); code != http.StatusForbidden || strings.Contains(page, `"org_id"`) {
			t.Errorf("a member's export: %d, want 403 and no event", code)
		}
		other := s.newClient(t, "globex", "alice")
		if _, _, body := other.download("/admin/audit/export?format=jsonl&user_id=bob"); strings.Contains(body, `"acme"`) {
			t.Error("globex's admin exported acme's events")
		}
		s.waitAuditEvent(t, "acme", "alice", "web:export_audit_log", "ok", "")
		s.waitAuditEvent(t, "acme", "alice", "web:export_audit_log", "invalid", "")

		// Over MCP, an admin's agent gets the download's link for its
		// person, who opens it signed in; a member's agent is refused.
		agent := s.agent(t, "acme", "alice")
		res := testkit.OK(t, agent, "get_audit_log", map[string]any{"org_id": "acme", "export": "csv", "user_id": "carol"})
		link, _ := res["download_url"].(string)
		u, err := url.Parse(link)
		if err != nil || u.Path != "/admin/audit/export" || u.Query().Get("format") != "csv" || u.Query().Get("user_id") != "carol" {
			t.Fatalf("download_url %q, want the CSV export of carol's events", link)
		}
		if _, _, body := alice.download(u.RequestURI()); strings.Count(body, "\n") != 5 || !strings.Contains(body, "list_users") {
			t.Errorf("the agent's link downloads %q, want carol's 4 events", body)
		}
		testkit.Fail(t, agent, "get_audit_log", map[string]any{"org_id": "acme", "export": "xml"}, "jsonl or csv")
		testkit.Fail(t, agent, "get_audit_log", map[string]any{"org_id": "acme", "export": "csv", "since": "yesterday"}, "since")
		testkit.Fail(t, s.agent(t, "acme", "bob"), "get_audit_log", map[string]any{"org_id": "acme", "export": "csv"}, "only org admins")
	})
}

// TestAdminAuditRetentionAndVerification: an admin sets how long the org's
// events are kept, from 30 days to 100 years, and is told what is wrong
// otherwise; the verification page says the chain holds, and once a row
// is edited in SQL names the event where it breaks.
func TestAdminAuditRetentionAndVerification(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		bob := s.agent(t, "acme", "bob")
		for range 5 {
			testkit.OK(t, bob, "whoami", nil)
		}
		alice := s.newClient(t, "acme", "alice")
		if _, page := alice.get("/admin/audit"); !strings.Contains(page, "kept 365 days (this server") {
			t.Error("the audit page does not say the default retention")
		}
		for _, bad := range []string{"29", "36501", "a year", ""} {
			if code, page := alice.post("/admin/audit/retention", url.Values{"retention_days": {bad}}); code != http.StatusBadRequest || !strings.Contains(page, `id="retention-error"`) || !strings.Contains(page, "from 30 to 36500") {
				t.Errorf("retention %q: %d, want 400 saying the bounds", bad, code)
			}
		}
		if code, page := alice.post("/admin/audit/retention", url.Values{"retention_days": {"400"}}); code != http.StatusOK || !strings.Contains(page, "Retention saved") || !strings.Contains(page, "kept 400 days") {
			t.Errorf("retention 400: %d, want saved", code)
		}
		if code, _ := s.newClient(t, "acme", "bob").post("/admin/audit/retention", url.Values{"retention_days": {"30"}}); code != http.StatusForbidden {
			t.Errorf("a member's retention change: %d, want 403", code)
		}
		s.waitAuditEvent(t, "acme", "alice", "web:set_audit_retention", "ok", "")
		// Once the org asks for passkeys, a shorter retention (evidence
		// deleted sooner) takes a fresh passkey; a longer one does not.
		if _, err := s.Orgs.SetSettings(dbtest.Operator(), "acme", orgs.Settings{ApprovalFactor: orgs.FactorPasskey}); err != nil {
			t.Fatal(err)
		}
		if code, page := alice.post("/admin/audit/retention", url.Values{"retention_days": {"30"}}); code != http.StatusUnauthorized || !strings.Contains(page, "Verify it is you") {
			t.Errorf("a shorter retention without a passkey: %d, want the step-up page", code)
		}
		if r, err := s.Audit.Retention(dbtest.Operator(), "acme"); err != nil || r.Days != 400 {
			t.Errorf("retention after the refused change: %+v, %v; want 400 kept", r, err)
		}
		if code, page := alice.post("/admin/audit/retention", url.Values{"retention_days": {"500"}}); code != http.StatusOK || !strings.Contains(page, "kept 500 days") {
			t.Errorf("a longer retention under passkeys: %d, want saved", code)
		}
		testkit.WaitFor(t, 10*time.Second, "bob's calls written", func() (bool, error) {
			var n int
			err := s.DB.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM audit_events WHERE org_id = 'acme' AND user_id = 'bob'`).Scan(&n)
			return n == 5, err
		})
		if code, page := alice.get("/admin/audit/verify"); code != http.StatusOK || !strings.Contains(page, "The chain holds") {
			t.Fatalf("verification of an untouched chain: %d %s", code, page)
		}
		if err := s.DB.Write(dbtest.Operator(), func(q db.Querier) error {
			_, err := q.Exec(dbtest.Operator(), `UPDATE audit_events SET outcome = 'invalid' WHERE org_id = 'acme' AND seq = 3`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if code, page := alice.get("/admin/audit/verify"); code != http.StatusOK || !strings.Contains(page, "does not hold at event 3") {
			t.Errorf("verification after an edit: %d, want the break at event 3", code)
		}
	})
}
