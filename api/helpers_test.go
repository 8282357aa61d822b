package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
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
