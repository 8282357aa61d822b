// Package apitest starts ctalk servers for the tests of api, tools and web:
// the one composition root, app.Assemble, on a real port over a test
// database, with settings that keep tests fast, closed with the test; and
// what those tests do with a running server. Only tests import it.
package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/syncbuf"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/wait"
)

// MetricsToken guards /metrics on test servers.
const MetricsToken = "metrics-test-token-0123456789"

// Fixture passwords.
const (
	AdminPW = "correct horse battery"
	UserPW  = "hunter22-long"
)

// SelfURL, as the PUBLIC_URL an adjustment of Start sets, is replaced by the
// server's own URL; SelfLocalhost by that URL under the name "localhost",
// where browsers allow passkeys over http.
const (
	SelfURL       = "self"
	SelfLocalhost = "self-localhost"
)

// Server is one ctalk server on a real port, with the parts behind it.
type Server struct {
	URL string
	DB  *db.DB
	*app.Assembly
	// Logs holds everything the server logged, debug lines included.
	Logs *syncbuf.Buffer
}

// Start runs a server over d on 127.0.0.1:0, closed with the test: fast
// password hashing, sign-up open and not throttled for one address, /metrics
// behind MetricsToken, every log line kept in Logs; adjust, when given,
// changes this configuration first.
func Start(t testing.TB, d *db.DB, adjust ...func(*app.Wiring)) *Server {
	t.Helper()
	acfg := auth.DefaultConfig()
	acfg.BcryptCost = 4
	// Tests create many organizations from one address.
	acfg.SignupBurst = 1000
	logs := &syncbuf.Buffer{}
	w := app.Wiring{
		API: api.Config{Version: "test", Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			AllowOrgSignup: true, MetricsToken: MetricsToken},
		Auth:  acfg,
		Inbox: inbox.DefaultConfig(),
	}
	for _, f := range adjust {
		f(&w)
	}
	// The port is taken first, so that the configuration can name it
	// (PUBLIC_URL, which mailed links start with).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	switch w.API.PublicURL {
	case SelfURL:
		w.API.PublicURL = "http://" + l.Addr().String()
	case SelfLocalhost:
		w.API.PublicURL = "http://localhost:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	}
	a, err := app.Assemble(d, w)
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(a.Handler())
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		a.Close(ctx)
		srv.Close()
	})
	return &Server{URL: srv.URL, DB: d, Assembly: a, Logs: logs}
}

// Org registers an org over MCP with users alice (admin) and bob, carol
// (members) and returns a logged-in session per user.
func Org(t testing.TB, base, era, orgID string) map[string]*mcp.ClientSession {
	t.Helper()
	anon := testkit.Connect(t, base, era, "")
	testkit.OK(t, anon, "register_organization", map[string]any{"org_id": orgID, "name": "Org " + orgID, "admin_password": AdminPW})
	out := map[string]*mcp.ClientSession{}
	for _, u := range []struct{ id, role string }{{"alice", "admin"}, {"bob", "member"}, {"carol", "member"}} {
		testkit.OK(t, anon, "register_user", map[string]any{
			"org_id": orgID, "admin_password": AdminPW, "user_id": u.id, "name": strings.ToUpper(u.id[:1]) + u.id[1:],
			"password": UserPW, "ownership": []string{u.id + "-repo"}, "role": u.role,
		})
		out[u.id] = testkit.Connect(t, base, era, Login(t, anon, orgID, u.id))
	}
	return out
}

// Login returns a fresh token for a user of the fixture.
func Login(t testing.TB, cs *mcp.ClientSession, orgID, userID string) string {
	t.Helper()
	res := testkit.OK(t, cs, "login", map[string]any{"org_id": orgID, "user_id": userID, "password": UserPW})
	tok, _ := res["auth_token"].(string)
	if !strings.HasPrefix(tok, "ctalk_") {
		t.Fatalf("login returned token %q", tok)
	}
	return tok
}

// Tokens registers org as Org does and returns a token per user.
func Tokens(t testing.TB, base, era, org string) map[string]string {
	t.Helper()
	Org(t, base, era, org)
	anon := testkit.Connect(t, base, era, "")
	out := map[string]string{}
	for _, u := range []string{"alice", "bob", "carol"} {
		out[u] = Login(t, anon, org, u)
	}
	return out
}

// REST calls the REST mirror with a bearer token and decodes a JSON answer.
func REST(t testing.TB, base, token, method, path, body string) (int, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: %d %q is not a JSON object", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, m
}

// WaitForWaiters waits until exactly n agents wait on the brokers together,
// and fails the test when they do not within 10 s.
func WaitForWaiters(t *testing.T, n int, brokers ...*wait.Broker) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("%d agents waiting", n), func() (bool, error) {
		w := 0
		for _, b := range brokers {
			w += b.Waiting()
		}
		if w != n {
			return false, fmt.Errorf("%d agents waiting, want %d", w, n)
		}
		return true, nil
	})
}

// RoundRobin is a small load balancer: each request goes to the next of
// the servers at bases, with no stickiness, and streams are passed through
// unbuffered. It forwards a public Host header, as platform proxies do.
func RoundRobin(t *testing.T, bases ...string) (*httptest.Server, *[]atomic.Int64) {
	t.Helper()
	var next atomic.Uint64
	hits := make([]atomic.Int64, len(bases))
	targets := make([]*url.URL, len(bases))
	for i, b := range bases {
		targets[i], _ = url.Parse(b)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			i := int(next.Add(1)-1) % len(targets)
			hits[i].Add(1)
			r.SetURL(targets[i])
			r.Out.Host = "ctalk.example.com"
			r.SetXForwarded()
		},
		FlushInterval: -1,
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv, &hits
}

// CountRows runs a COUNT query; an error fails the test rather than reading
// as zero.
func CountRows(t testing.TB, d *db.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := d.QueryRow(dbtest.Operator(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// AuditEvents reads an org's audit log as its admin until it has at least n
// events: events are written in the background.
func AuditEvents(t *testing.T, admin *mcp.ClientSession, orgID string, args map[string]any, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := map[string]any{"org_id": orgID}
		for k, v := range args {
			a[k] = v
		}
		raw := testkit.OK(t, admin, "get_audit_log", a)["events"].([]any)
		if len(raw) >= n || time.Now().After(deadline) {
			out := make([]map[string]any, len(raw))
			for i, e := range raw {
				out[i] = e.(map[string]any)
			}
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// AwaitRefused waits until cs's token is refused by three calls in a row
// (through a round-robin balancer, by every replica), for at most a generous
// deadline: a token row changed behind the server's back (as the tests that
// age a token do), or revoked on another replica, is refused within
// auth.TokenCacheTTL, when the replica's cached check of it expires.
func AwaitRefused(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	inRow := 0
	err := testkit.Poll(context.Background(), 10*time.Second+auth.TokenCacheTTL, 10*time.Millisecond, func() (bool, error) {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "whoami"})
		if err != nil && strings.Contains(err.Error(), "Unauthorized") {
			inRow++
		} else {
			inRow = 0
		}
		return inRow == 3, nil
	})
	if err != nil {
		t.Fatal("the token is still accepted")
	}
}

// Eventually waits until user's presence, as cs reads it, is want, and
// returns their last_seen_at then.
func Eventually(t *testing.T, cs *mcp.ClientSession, user, channel, want string) any {
	t.Helper()
	var seen any
	testkit.WaitFor(t, 20*time.Second, user+" "+want, func() (bool, error) {
		p, last := PresenceOf(t, cs, user, channel)
		seen = last
		if p != want {
			return false, fmt.Errorf("%s is %q", user, p)
		}
		return true, nil
	})
	return seen
}

// PresenceOf reads a user's presence in list_users, get_user_profile and
// get_channel's members; when they disagree (a wait may start or end
// between the calls) it returns "".
func PresenceOf(t *testing.T, cs *mcp.ClientSession, user, channel string) (presence string, lastSeen any) {
	t.Helper()
	var fromList any
	for _, u := range testkit.List(testkit.OK(t, cs, "list_users", nil), "users") {
		if testkit.Field(u, "user_id") == user {
			fromList, lastSeen = testkit.Field(u, "presence"), testkit.Field(u, "last_seen_at")
		}
	}
	fromProfile := testkit.Field(testkit.OK(t, cs, "get_user_profile", map[string]any{"user_id": user})["user"], "presence")
	var fromMembers any
	for _, m := range testkit.List(testkit.OK(t, cs, "get_channel", map[string]any{"channel": channel}), "members") {
		if testkit.Field(m, "user_id") == user {
			fromMembers = testkit.Field(m, "presence")
		}
	}
	if fromList != fromProfile || fromList != fromMembers {
		return "", nil
	}
	p, _ := fromList.(string)
	return p, lastSeen
}

// Tables returns the names of the database's tables.
func Tables(t *testing.T, d *db.DB) []string {
	t.Helper()
	names := dbtest.Tables(t, d)
	if len(names) < 4 {
		t.Fatalf("found only the tables %v", names)
	}
	return names
}

// TableRows returns every column of every row of a table as text, one line
// a row, so that a column added later is read too.
func TableRows(t *testing.T, d *db.DB, table string) string {
	t.Helper()
	rows, err := d.Query(dbtest.Operator(), `SELECT * FROM `+table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		vals, err := dbtest.Values(rows)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(&b, table, ":")
		for _, v := range vals {
			fmt.Fprint(&b, " ", v)
		}
		b.WriteString("\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
