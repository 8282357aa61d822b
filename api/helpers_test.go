package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/syncbuf"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/wait"
)

// The two protocol eras current clients speak.
const (
	eraSessions  = testkit.EraSessions
	eraStateless = testkit.EraStateless
)

var eras = testkit.Eras

// The tool-call helpers of the test kit, under the short names every test
// here uses.
var (
	call = testkit.Call
	ok   = testkit.OK
	fail = testkit.Fail
	text = testkit.Text
)

// env is one ctalk server on a real port over a fresh database.
type env struct {
	URL  string
	DB   *db.DB
	Auth *auth.Service
	App  *api.Server
	// Broker wakes this server's waiting agents.
	Broker *wait.Broker
	Orgs   *orgs.Service
	logs   *syncbuf.Buffer
}

// testMetricsToken guards /metrics on test servers.
const testMetricsToken = "metrics-test-token-0123456789"

// options adjust a test server.
type options struct {
	auth       func(*auth.Config)
	api        func(*api.Config)
	inbox      func(*inbox.Config)
	sharedWith *env // open on the same database as another server
}

// start runs a server on a fresh database of engine e, on 127.0.0.1:0.
func start(t testing.TB, e db.Engine, opts ...options) *env {
	t.Helper()
	var o options
	if len(opts) > 0 {
		o = opts[0]
	}
	var d *db.DB
	if o.sharedWith != nil {
		d = o.sharedWith.DB
	} else {
		d = dbtest.Open(t, e)
	}
	acfg := auth.DefaultConfig()
	acfg.BcryptCost = 4
	// Tests create many organizations from one address.
	acfg.SignupBurst = 1000
	if o.auth != nil {
		o.auth(&acfg)
	}
	logs := &syncbuf.Buffer{}
	cfg := api.Config{Version: "test", Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), AllowOrgSignup: true,
		MetricsToken: testMetricsToken}
	if o.api != nil {
		o.api(&cfg)
	}
	icfg := inbox.DefaultConfig()
	if o.inbox != nil {
		o.inbox(&icfg)
	}
	app, err := api.Assemble(d, api.Wiring{API: cfg, Auth: acfg, Inbox: icfg})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		app.Close(ctx)
		srv.Close()
	})
	return &env{URL: srv.URL, DB: d, Auth: app.Auth, App: app.Server, Broker: app.Broker, Orgs: app.Orgs, logs: logs}
}

// each runs fn on both engines and in both protocol eras, on servers
// started with opts.
func each(t *testing.T, fn func(t *testing.T, e *env, era string), opts ...options) {
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			for _, era := range eras {
				t.Run(era, func(t *testing.T) {
					fn(t, start(t, engine, opts...), era)
				})
			}
		})
	}
}

// connect opens an official-SDK client session in the given era, sending
// token as a bearer header when it is not empty.
func (e *env) connect(t testing.TB, era, token string) *mcp.ClientSession {
	t.Helper()
	return testkit.Connect(t, e.URL, era, token)
}

// Fixture passwords.
const (
	adminPW = "correct horse battery"
	userPW  = "hunter22-long"
)

// org registers an org with users alice (admin) and bob, carol (members)
// and returns a logged-in session per user.
func (e *env) org(t testing.TB, era, orgID string) map[string]*mcp.ClientSession {
	t.Helper()
	anon := e.connect(t, era, "")
	ok(t, anon, "register_organization", map[string]any{"org_id": orgID, "name": "Org " + orgID, "admin_password": adminPW})
	out := map[string]*mcp.ClientSession{}
	for _, u := range []struct{ id, role string }{{"alice", "admin"}, {"bob", "member"}, {"carol", "member"}} {
		ok(t, anon, "register_user", map[string]any{
			"org_id": orgID, "admin_password": adminPW, "user_id": u.id, "name": strings.ToUpper(u.id[:1]) + u.id[1:],
			"password": userPW, "ownership": []string{u.id + "-repo"}, "role": u.role,
		})
		out[u.id] = e.connect(t, era, e.login(t, anon, orgID, u.id))
	}
	return out
}

// login returns a fresh token for a user.
func (e *env) login(t testing.TB, cs *mcp.ClientSession, orgID, userID string) string {
	t.Helper()
	res := ok(t, cs, "login", map[string]any{"org_id": orgID, "user_id": userID, "password": userPW})
	tok, _ := res["auth_token"].(string)
	if !strings.HasPrefix(tok, "ctalk_") {
		t.Fatalf("login returned token %q", tok)
	}
	return tok
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// countRows runs a COUNT query; an error fails the test rather than reading
// as zero.
func countRows(t testing.TB, d *db.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := d.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func postForm(t *testing.T, u string, form url.Values) (int, string) {
	t.Helper()
	resp, err := http.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// roundRobin is a small load balancer: each request goes to the next
// replica, with no stickiness, and streams are passed through unbuffered.
// It forwards a public Host header, as platform proxies do.
func roundRobin(t *testing.T, replicas ...*env) (*httptest.Server, *[]atomic.Int64) {
	t.Helper()
	var next atomic.Uint64
	hits := make([]atomic.Int64, len(replicas))
	targets := make([]*url.URL, len(replicas))
	for i, r := range replicas {
		targets[i], _ = url.Parse(r.URL)
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

// initSession initializes a session of the 2025-11-25 protocol by hand, as
// the holder of token ("" for none), and returns its Mcp-Session-Id.
func initSession(t *testing.T, base, token string) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + eraSessions + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	resp := rawMCP(t, t.Context(), http.MethodPost, base, token, "", body)
	io.Copy(io.Discard, resp.Body)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, sid)
	}
	return sid
}

// auditEvents reads an org's audit log as its admin until it has at least n
// events: events are written in the background.
func auditEvents(t *testing.T, admin *mcp.ClientSession, orgID string, args map[string]any, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := map[string]any{"org_id": orgID}
		for k, v := range args {
			a[k] = v
		}
		raw := ok(t, admin, "get_audit_log", a)["events"].([]any)
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

// waitForWaiters waits until exactly n agents wait on e's server and the
// servers of more together, and fails the test when they do not within 10 s.
func waitForWaiters(t *testing.T, e *env, n int, more ...*env) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("%d agents waiting", n), func() (bool, error) {
		w := e.Broker.Waiting()
		for _, m := range more {
			w += m.Broker.Waiting()
		}
		if w != n {
			return false, fmt.Errorf("%d agents waiting, want %d", w, n)
		}
		return true, nil
	})
}

// connectAs opens a stateless-era session whose requests carry hdr.
func connectAs(t *testing.T, e *env, hdr map[string]string) *mcp.ClientSession {
	t.Helper()
	return testkit.ConnectWith(t, e.URL, eraStateless, testkit.Transport{Header: hdr})
}

func list(m map[string]any, key string) []any {
	l, _ := m[key].([]any)
	return l
}

// rest calls the REST mirror with a bearer token and decodes a JSON answer.
func (e *env) rest(t testing.TB, token, method, path, body string) (int, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, e.URL+path, strings.NewReader(body))
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

// tokens logs the fixture's users of org in and returns their tokens.
func (e *env) tokens(t testing.TB, era, org string) map[string]string {
	t.Helper()
	e.org(t, era, org)
	anon := e.connect(t, era, "")
	out := map[string]string{}
	for _, u := range []string{"alice", "bob", "carol"} {
		out[u] = e.login(t, anon, org, u)
	}
	return out
}

// rawMCP sends one request to /mcp of the session era, on session sid.
func rawMCP(t *testing.T, ctx context.Context, method, base, token, sid, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("MCP-Protocol-Version", eraSessions)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// awaitRefused waits until cs's token is refused by three calls in a row
// (through a round-robin balancer, by every replica), for at most a generous
// deadline: a token row changed behind the server's back (as the tests that
// age a token do), or revoked on another replica, is refused within
// auth.TokenCacheTTL, when the replica's cached check of it expires.
func awaitRefused(t *testing.T, cs *mcp.ClientSession) {
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

// subscriber opens an official-SDK session of the session era, with its
// standalone event stream, that reports each notifications/resources/updated
// on the returned channel.
func subscriber(t *testing.T, base, token string) (*mcp.ClientSession, <-chan string) {
	t.Helper()
	updates := make(chan string, 100)
	c := mcp.NewClient(&mcp.Implementation{Name: "subscriber", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updates <- req.Params.URI
		},
	})
	tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: testkit.Bearer(token)}, MaxRetries: -1}
	cs, err := c.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: eraSessions})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, updates
}

func nextUpdate(t *testing.T, updates <-chan string) string {
	t.Helper()
	select {
	case uri := <-updates:
		return uri
	case <-time.After(20 * time.Second):
		t.Fatal("no notifications/resources/updated")
		return ""
	}
}

// attached posts until a first notification arrives, which says the
// client's event stream (opened in the background after initialize) is
// attached: what is posted before that reaches no stream.
func attached(t *testing.T, updates <-chan string, post func()) string {
	t.Helper()
	for range 20 {
		post()
		select {
		case uri := <-updates:
			return uri
		case <-time.After(time.Second):
		}
	}
	t.Fatal("no notifications/resources/updated after 20 posts")
	return ""
}

// drained reads the notifications already queued.
func drained(updates <-chan string) []string {
	var out []string
	for {
		select {
		case uri := <-updates:
			out = append(out, uri)
		default:
			return out
		}
	}
}

// openStream opens GET /mcp as the holder of token, for session sid.
func openStream(t *testing.T, ctx context.Context, base, token, sid string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("MCP-Protocol-Version", eraSessions)
	req.Header.Set("Mcp-Session-Id", sid)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func field(v any, key string) any {
	m, _ := v.(map[string]any)
	return m[key]
}

// eventually waits until user's presence, as cs reads it, is want.
func eventually(t *testing.T, cs *mcp.ClientSession, user, channel, want string) any {
	t.Helper()
	var seen any
	testkit.WaitFor(t, 20*time.Second, user+" "+want, func() (bool, error) {
		p, last := presenceOf(t, cs, user, channel)
		seen = last
		if p != want {
			return false, fmt.Errorf("%s is %q", user, p)
		}
		return true, nil
	})
	return seen
}

// tables returns the names of the database's tables.
func tables(t *testing.T, d *db.DB) []string {
	t.Helper()
	names := dbtest.Tables(t, d)
	if len(names) < 4 {
		t.Fatalf("found only the tables %v", names)
	}
	return names
}

// tableRows returns every column of every row of a table as text, one line
// a row, so that a column added later is read too.
func tableRows(t *testing.T, d *db.DB, table string) string {
	t.Helper()
	rows, err := d.Query(context.Background(), `SELECT * FROM `+table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(&b, table, ":")
		for _, v := range vals {
			if bs, ok := v.([]byte); ok {
				v = string(bs)
			}
			fmt.Fprint(&b, " ", v)
		}
		b.WriteString("\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// refused requires a tool call on a session whose token stopped working to
// fail at the HTTP layer with 401, on this very call.
func refused(t *testing.T, cs *mcp.ClientSession, tool string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool})
	if err == nil {
		t.Fatalf("%s with a dead token succeeded: %s", tool, text(res))
	}
	if !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("%s with a dead token: %v; want HTTP 401 Unauthorized", tool, err)
	}
}

// presenceOf reads a user's presence in list_users, get_user_profile and
// get_channel's members, and fails the test when they disagree.
func presenceOf(t *testing.T, cs *mcp.ClientSession, user, channel string) (presence string, lastSeen any) {
	t.Helper()
	var fromList any
	for _, u := range list(ok(t, cs, "list_users", nil), "users") {
		if field(u, "user_id") == user {
			fromList, lastSeen = field(u, "presence"), field(u, "last_seen_at")
		}
	}
	fromProfile := field(ok(t, cs, "get_user_profile", map[string]any{"user_id": user})["user"], "presence")
	var fromMembers any
	for _, m := range list(ok(t, cs, "get_channel", map[string]any{"channel": channel}), "members") {
		if field(m, "user_id") == user {
			fromMembers = field(m, "presence")
		}
	}
	if fromList != fromProfile || fromList != fromMembers {
		// A wait may start or end between the calls: read again.
		return "", nil
	}
	p, _ := fromList.(string)
	return p, lastSeen
}

// initializeBody is an initialize request of the 2025-11-25 era.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
