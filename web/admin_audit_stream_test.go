package web_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/notify"
)

// collector is a SIEM's collector on loopback: it checks each request's
// signature with the secret the admin was shown and keeps the events.
type collector struct {
	*httptest.Server
	mu      sync.Mutex
	secret  string
	events  []audit.Event
	badSigs int
}

func newCollector(t *testing.T) *collector {
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		defer c.mu.Unlock()
		unix, _ := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
		want, err := notify.Sign(c.secret, r.Header.Get("webhook-id"), time.Unix(unix, 0), body)
		if err != nil || r.Header.Get("webhook-signature") != want {
			c.badSigs++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			var e audit.Event
			json.Unmarshal(sc.Bytes(), &e)
			c.events = append(c.events, e)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(c.Close)
	return c
}

// has reports whether an event of tool by user arrived, and fails on an
// event of another org or a bad signature.
func (c *collector) has(t *testing.T, tool, user string) bool {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.badSigs > 0 {
		t.Fatalf("%d requests with a bad signature", c.badSigs)
	}
	for _, e := range c.events {
		if e.OrgID != "acme" {
			t.Fatalf("globex's event reached acme's collector: %+v", e)
		}
		if e.Tool == tool && e.UserID == user {
			return true
		}
	}
	return false
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events)
}

// TestAdminAuditStream: an admin turns the audit stream on from the audit
// page and is shown its secret once; the org's tool calls reach the
// collector, signed, and another org's never do; the page shows the last
// delivery; a test event arrives; turned off, nothing more is sent. A
// member can do none of it, and the audit record holds who did it, never
// the secret.
func TestAdminAuditStream(t *testing.T) {
	each(t, func(t *testing.T, engine db.Engine) {
		col := newCollector(t)
		s := start(t, engine, func(w *app.Wiring) {
			w.Notify = notify.DefaultConfig()
			w.Notify.AllowHTTP = true
			w.Notify.Poll = 20 * time.Millisecond
		})
		s.org(t, "acme")
		s.org(t, "globex")
		ctx := dbtest.Operator()
		alice, bob := s.newClient(t, "acme", "alice"), s.newClient(t, "acme", "bob")
		if code, _ := bob.post("/admin/audit/stream", url.Values{"url": {col.URL}}); code != http.StatusForbidden {
			t.Fatalf("a member turned the stream on: %d", code)
		}
		if code, page := alice.post("/admin/audit/stream", url.Values{"url": {"ftp://siem.test"}}); code != http.StatusBadRequest || !strings.Contains(page, "https://") {
			t.Fatalf("a bad URL: %d", code)
		}
		code, page := alice.post("/admin/audit/stream", url.Values{"url": {col.URL}})
		col.mu.Lock()
		col.secret = secretIn(page)
		col.mu.Unlock()
		if code != http.StatusOK || col.secret == "" {
			t.Fatalf("turn the stream on: %d, secret %q", code, col.secret)
		}
		if _, again := alice.get("/admin/audit"); secretIn(again) != "" {
			t.Fatal("the secret is shown again")
		}
		agent, stranger := s.agent(t, "acme", "bob"), s.agent(t, "globex", "bob")
		testkit.OK(t, agent, "whoami", nil)
		testkit.OK(t, stranger, "whoami", nil)
		testkit.WaitFor(t, 10*time.Second, "bob's call and the stream's start at the collector", func() (bool, error) {
			return col.has(t, "whoami", "bob") && col.has(t, "web:set_audit_stream", "alice"), nil
		})
		testkit.WaitFor(t, 10*time.Second, "the delivery shown", func() (bool, error) {
			_, page := alice.get("/admin/audit")
			return strings.Contains(page, "taken") && strings.Contains(page, col.URL), nil
		})

		if code, page := alice.post("/admin/audit/stream/test", url.Values{}); code != http.StatusOK || !strings.Contains(page, "The test event reached your audit stream") {
			t.Fatalf("test event: %d", code)
		}
		if !col.has(t, "test", "") {
			t.Fatal("the test event did not arrive")
		}
		if code, _ := bob.post("/admin/audit/stream/off", url.Values{}); code != http.StatusForbidden {
			t.Fatalf("a member turned the stream off: %d", code)
		}
		if code, page := alice.post("/admin/audit/stream/off", url.Values{}); code != http.StatusOK || !strings.Contains(page, "The audit stream is off") {
			t.Fatalf("turn the stream off: %d", code)
		}
		s.waitAuditEvent(t, "acme", "alice", "web:stop_audit_stream", "ok", "")
		n := col.count()
		testkit.OK(t, agent, "whoami", nil)
		testkit.WaitFor(t, 10*time.Second, "bob's second call recorded", func() (bool, error) {
			var calls int
			err := s.DB.QueryRow(ctx, `SELECT COUNT(*) FROM audit_events WHERE org_id = 'acme' AND tool = 'whoami'`).Scan(&calls)
			return calls == 2, err
		})
		if sent, err := s.Notify.StreamAudit(ctx); err != nil || sent != 0 || col.count() != n {
			t.Fatalf("after turning off: %d streams claimed (%v), %d events sent, want none", sent, err, col.count()-n)
		}
		s.waitAuditEvent(t, "acme", "alice", "web:set_audit_stream", "ok", "")
		s.noSecret(t, col.secret)
	})
}
