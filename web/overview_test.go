package web_test

import (
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/testkit"
)

// figure returns the number shown before label in the overview's figures,
// or "".
func figure(page, label string) string {
	m := regexp.MustCompile(`<li><strong>(\d+)</strong> ` + label).FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestOverviewShowsTheOrgsOwnNumbers: the admins' overview counts acme's
// questions, open questions, channel messages and tool calls, none of
// globex's, for admins only, and refuses a range it does not offer.
func TestOverviewShowsTheOrgsOwnNumbers(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		ctx := dbtest.Operator()
		for _, org := range []string{"acme", "globex"} {
			s.org(t, org)
		}
		ask := func(org, from, to, text string) *inbox.Question {
			q, err := s.Inbox.Ask(ctx, ctalk.Caller{OrgID: org, UserID: from}, inbox.Ask{To: to, Text: text})
			if err != nil {
				t.Fatal(err)
			}
			return q
		}
		q := ask("acme", "bob", "alice", "Where is the runbook?")
		ask("acme", "carol", "alice", "Deploy on Friday?")
		ask("acme", "alice", "bob", "Which branch?")
		for range 4 {
			ask("globex", "bob", "carol", "globex's own")
		}
		if _, err := s.Inbox.AnswerDirectly(ctx, ctalk.Caller{OrgID: "acme", UserID: "alice"}, q.ID, "docs/runbook.md"); err != nil {
			t.Fatal(err)
		}
		alice := ctalk.Caller{OrgID: "acme", UserID: "alice"}
		if _, err := s.Channels.Create(ctx, alice, channels.NewChannel{Name: "general", Members: []string{"bob"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Channels.Post(ctx, alice, channels.Post{Channel: "general", Text: "Freeze on Friday."}); err != nil {
			t.Fatal(err)
		}
		bob := s.agent(t, "acme", "bob")
		for range 3 {
			testkit.OK(t, bob, "whoami", nil)
		}
		testkit.Fail(t, bob, "get_user_profile", map[string]any{"user_id": "nobody"}, "not")
		s.waitAuditEvent(t, "acme", "bob", "get_user_profile", "not_found", "")

		admin := s.newClient(t, "acme", "alice")
		code, page := admin.get("/admin/overview?days=30")
		if code != http.StatusOK {
			t.Fatalf("overview: %d\n%s", code, page)
		}
		for label, want := range map[string]string{"asked": "3", "answered": "1", "calls": "4"} {
			if got := figure(page, label); got != want {
				t.Errorf("figure %q = %q, want %q", label, got, want)
			}
		}
		for _, want := range []string{"1 message in the range", "2 questions wait for an answer", "Error rate <strong>25.0%</strong>",
			`<a href="/admin/members/alice">alice</a></th><td>1</td><td>0</td><td>0</td><td>0</td><td>1</td>`, `aria-current="page">Last 30 days`,
			`srcset="/admin/overview/questions.svg?days=30&amp;theme=dark"`} {
			if !strings.Contains(page, want) {
				t.Errorf("the overview lacks %q", want)
			}
		}
		if strings.Contains(page, "globex") {
			t.Error("acme's overview mentions globex")
		}
		if _, other := s.newClient(t, "globex", "alice").get("/admin/overview"); figure(other, "asked") != "4" || figure(other, "calls") != "0" {
			t.Errorf("globex's overview: asked %q, calls %q; want its own 4 and 0", figure(other, "asked"), figure(other, "calls"))
		}
		if code, _ := s.newClient(t, "acme", "bob").get("/admin/overview"); code != http.StatusForbidden {
			t.Errorf("a member opens the overview: %d, want 403", code)
		}
		if code, body := admin.get("/admin/overview?days=12"); code != http.StatusBadRequest || !strings.Contains(body, "days must be 7, 30 or 90") {
			t.Errorf("days=12: %d, want 400 saying which ranges there are", code)
		}
	})
}

// TestOverviewChartsAreStrictSVG: each chart is an SVG image of the org's
// numbers in the theme asked for, with headers that let it be nothing else.
func TestOverviewChartsAreStrictSVG(t *testing.T) {
	t.Parallel()
	s := start(t, db.SQLite)
	s.org(t, "acme")
	testkit.OK(t, s.agent(t, "acme", "bob"), "whoami", nil)
	s.waitAuditEvent(t, "acme", "bob", "whoami", "ok", "")
	admin := s.newClient(t, "acme", "alice")
	for _, name := range []string{"questions", "open", "calls", "tools", "latency", "channels", "notify"} {
		for theme, background := range map[string]string{"light": "white", "dark": "rgb(22,27,34)"} {
			resp, err := admin.http.Get(s.URL + "/admin/overview/" + name + ".svg?days=90&theme=" + theme)
			if err != nil {
				t.Fatal(err)
			}
			code, body := read(t, resp)
			h := resp.Header
			if code != http.StatusOK || h.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(body, "<svg") ||
				!strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") || h.Get("X-Content-Type-Options") != "nosniff" ||
				h.Get("Cache-Control") != "no-store" || !strings.Contains(body, "fill:"+background) {
				t.Errorf("%s.svg (%s): %d %v, starts %.60q", name, theme, code, h, body)
			}
		}
	}
	if resp, err := admin.http.Get(s.URL + "/admin/overview/tools.svg?days=90"); err == nil {
		if _, body := read(t, resp); !strings.Contains(body, ">whoami<") {
			t.Error("the tools chart does not name the tool called")
		}
	}
	for path, want := range map[string]int{"/admin/overview/nope.svg": 404, "/admin/overview/calls.png": 404, "/admin/overview/calls.svg?days=3": 400} {
		if code, _ := admin.get(path); code != want {
			t.Errorf("%s: %d, want %d", path, code, want)
		}
	}
}

// TestOverviewChartsDrawWhatThePageRead: the seven charts a browser asks
// for after the overview page draw the numbers the page read (those of the
// tables beside them) without reading any section again, while a chart
// asked for without its page, or of another range, reads its own.
func TestOverviewChartsDrawWhatThePageRead(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		admin := s.newClient(t, "acme", "alice")
		var mu sync.Mutex
		reads := 0
		s.DB.OnStatement(func(q string) {
			for _, table := range []string{"question_days", "audit_daily", "channel_days", "notify_deliveries"} {
				if strings.Contains(q, table) {
					mu.Lock()
					reads++
					mu.Unlock()
				}
			}
		})
		defer s.DB.OnStatement(nil)
		counted := func() int { mu.Lock(); defer mu.Unlock(); n := reads; reads = 0; return n }
		if code, _ := admin.get("/admin/overview?days=30"); code != http.StatusOK || counted() == 0 {
			t.Fatalf("the page: %d, reading no section", code)
		}
		for _, name := range []string{"questions", "open", "calls", "tools", "latency", "channels", "notify"} {
			if code, _ := admin.get("/admin/overview/" + name + ".svg?days=30&theme=dark"); code != http.StatusOK {
				t.Fatalf("%s.svg: %d", name, code)
			}
		}
		if n := counted(); n != 0 {
			t.Errorf("the page's charts read the sections %d times again, want none", n)
		}
		if code, _ := admin.get("/admin/overview/calls.svg?days=90"); code != http.StatusOK || counted() == 0 {
			t.Errorf("a chart of a range no page read: %d, reading no section", code)
		}
	})
}
