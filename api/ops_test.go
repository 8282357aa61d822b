package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestAuditLogRecordsToolCalls(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		other := e.Org(t, era, "other")
		bob, alice := u["bob"], u["alice"]
		const secretText = "the launch code is 0000"
		id := ok(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": secretText})["message_id"].(string)
		ok(t, alice, "propose_response", map[string]any{"message_id": id, "draft_text": secretText})
		fail(t, alice, "send_response", map[string]any{"message_id": id, "final_text": "edited"}, "not the latest")
		ok(t, alice, "send_response", map[string]any{"message_id": id, "final_text": secretText})
		ok(t, bob, "wait_for_reply", map[string]any{"message_id": id, "timeout_s": 1})

		events := auditEvents(t, alice, "acme", map[string]any{"user_id": "alice", "tool": "send_response"}, 2)
		if len(events) != 2 {
			t.Fatalf("send_response events of alice = %v", events)
		}
		// Newest first: the accepted send, then the refused one.
		if events[0]["outcome"] != "ok" || events[1]["outcome"] != "conflict" || mustJSON(events[0]["ids"]) != `["`+id+`"]` {
			t.Fatalf("send_response events = %v", events)
		}
		ask := auditEvents(t, alice, "acme", map[string]any{"tool": "ask_person"}, 1)
		if len(ask) != 1 || ask[0]["user_id"] != "bob" || ask[0]["org_id"] != "acme" || mustJSON(ask[0]["ids"]) != `["alice","`+id+`"]` {
			t.Fatalf("ask_person events = %v", ask)
		}
		if refused := auditEvents(t, alice, "acme", map[string]any{"outcome": "conflict"}, 1); len(refused) != 1 {
			t.Fatalf("conflict events = %v", refused)
		}
		// Paging runs newest first without overlap.
		page1 := ok(t, alice, "get_audit_log", map[string]any{"org_id": "acme", "limit": 2})
		page2 := ok(t, alice, "get_audit_log", map[string]any{"org_id": "acme", "limit": 2, "cursor": page1["next_cursor"]})
		p1, p2 := page1["events"].([]any), page2["events"].([]any)
		if len(p1) != 2 || len(p2) == 0 || p1[1].(map[string]any)["id"].(float64) <= p2[0].(map[string]any)["id"].(float64) {
			t.Fatalf("pages overlap or are out of order: %v / %v", p1, p2)
		}

		// Never bodies, passwords or tokens, in any column of any audit
		// table. The dump holds the ids, so it did read the events.
		var dump strings.Builder
		for _, table := range tables(t, e.DB) {
			if strings.HasPrefix(table, "audit") {
				dump.WriteString(tableRows(t, e.DB, table))
			}
		}
		if !strings.Contains(dump.String(), id) {
			t.Fatalf("the audit tables do not show message %s:\n%s", id, dump.String())
		}
		for _, secret := range []string{secretText, userPW, adminPW, "ctalk_"} {
			if strings.Contains(dump.String(), secret) {
				t.Fatalf("the audit log contains %q:\n%s", secret, dump.String())
			}
		}

		// Only admins, and only of their own org.
		fail(t, bob, "get_audit_log", map[string]any{"org_id": "acme"}, "only org admins")
		fail(t, other["alice"], "get_audit_log", map[string]any{"org_id": "acme"}, "not found")
		fail(t, other["alice"], "get_audit_log", map[string]any{"org_id": "acme", "admin_password": adminPW}, "not found")
		// Org other's own log is not empty (its users logged in and were
		// refused acme's log), and shows none of acme's events.
		otherEvents := auditEvents(t, other["alice"], "other", nil, 1)
		if len(otherEvents) == 0 {
			t.Fatal("org other's log is empty")
		}
		for _, ev := range otherEvents {
			if ev["org_id"] != "other" {
				t.Fatalf("org other's log shows %v", ev)
			}
		}
		fail(t, alice, "get_audit_log", map[string]any{"org_id": "acme", "outcome": "great"}, "not one of")
	})
}

// TestExportOrgLinksToTheDownload: export_org gives an admin's agent the
// Admin page's download of the org's data, a link with no credential in
// it; a member's agent is refused.
func TestExportOrgLinksToTheDownload(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		res := ok(t, u["alice"], "export_org", map[string]any{"org_id": "acme"})
		link, _ := res["download_url"].(string)
		if !strings.HasSuffix(link, "/admin#org-data") || strings.Contains(link, "?") || res["next_step"] == "" {
			t.Fatalf("export_org = %v, want the Admin page's download section and no query", res)
		}
		fail(t, u["bob"], "export_org", map[string]any{"org_id": "acme"}, "only org admins")
	})
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite")
	u := e.Org(t, eraStateless, "acme")
	ok(t, u["bob"], "whoami", nil)
	fail(t, e.Connect(t, eraStateless, ""), "login", map[string]any{"org_id": "acme", "user_id": "bob", "password": "wrong-password"}, "login failed")

	get := func(token string) (int, string) {
		req, _ := http.NewRequest("GET", e.URL+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Fatalf("/metrics without a token: %d, want 401", code)
	}
	if code, _ := get("metrics-test-token-wrong-wrong"); code != http.StatusUnauthorized {
		t.Fatalf("/metrics with a wrong token: %d, want 401", code)
	}
	code, body := get(testMetricsToken)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`ctalk_tool_calls_total{outcome="ok",tool="whoami"} 1`,
		`ctalk_tool_calls_total{outcome="unauthorized",tool="login"} 1`,
		`ctalk_login_failures_total{reason="unauthorized"} 1`,
		`ctalk_tool_call_duration_seconds_bucket{tool="whoami"`,
		`ctalk_waiting_agents 0`,
		`go_sql_in_use_connections{db_name="sqlite"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
