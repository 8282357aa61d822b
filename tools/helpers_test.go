package tools_test

import (
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/app"
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

// The helpers of the test kit and of apitest, under the short names every
// test here uses.
var (
	call      = testkit.Call
	ok        = testkit.OK
	fail      = testkit.Fail
	text      = testkit.Text
	mustJSON  = testkit.MustJSON
	field     = testkit.Field
	list      = testkit.List
	countRows = apitest.CountRows
	postForm  = testkit.PostForm
	// Raw requests to /mcp and its event stream.
	rawMCP      = testkit.RawMCP
	openStream  = testkit.OpenStream
	initSession = testkit.InitSession
	refused     = testkit.Refused
	// Resource subscriptions.
	subscriber = testkit.Subscriber
	nextUpdate = testkit.NextUpdate
	attached   = testkit.Attached
	drained    = testkit.Drained
	// State the server reports.
	auditEvents  = apitest.AuditEvents
	awaitRefused = apitest.AwaitRefused
	eventually   = apitest.Eventually
	presenceOf   = apitest.PresenceOf
	tables       = apitest.Tables
	tableRows    = apitest.TableRows
)

const (
	initializeBody = testkit.InitializeBody
	// testMetricsToken guards /metrics on test servers.
	testMetricsToken = apitest.MetricsToken
	// Fixture passwords.
	adminPW = apitest.AdminPW
	userPW  = apitest.UserPW
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

// options adjust a test server.
type options struct {
	auth       func(*auth.Config)
	api        func(*api.Config)
	inbox      func(*inbox.Config)
	sharedWith *env // open on the same database as another server
}

// start runs a server on a fresh database of engine e, on 127.0.0.1:0 (see
// apitest.Start).
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
	s := apitest.Start(t, d, func(w *app.Wiring) {
		if o.auth != nil {
			o.auth(&w.Auth)
		}
		if o.api != nil {
			o.api(&w.API)
		}
		if o.inbox != nil {
			o.inbox(&w.Inbox)
		}
	})
	return &env{URL: s.URL, DB: d, Auth: s.Auth, App: s.Server, Broker: s.Broker, Orgs: s.Orgs, logs: s.Logs}
}

// each runs fn on both engines and in both protocol eras, on servers
// started with opts, in parallel: each run has a server and a database of
// its own.
func each(t *testing.T, fn func(t *testing.T, e *env, era string), opts ...options) {
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			for _, era := range eras {
				t.Run(era, func(t *testing.T) {
					t.Parallel()
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

// org registers an org with users alice (admin) and bob, carol (members)
// and returns a logged-in session per user.
func (e *env) org(t testing.TB, era, orgID string) map[string]*mcp.ClientSession {
	t.Helper()
	return apitest.Org(t, e.URL, era, orgID)
}

// login returns a fresh token for a user.
func (e *env) login(t testing.TB, cs *mcp.ClientSession, orgID, userID string) string {
	t.Helper()
	return apitest.Login(t, cs, orgID, userID)
}

// tokens logs the fixture's users of org in and returns their tokens.
func (e *env) tokens(t testing.TB, era, org string) map[string]string {
	t.Helper()
	return apitest.Tokens(t, e.URL, era, org)
}

// rest calls the REST mirror with a bearer token and decodes a JSON answer.
func (e *env) rest(t testing.TB, token, method, path, body string) (int, map[string]any) {
	t.Helper()
	return apitest.REST(t, e.URL, token, method, path, body)
}

// waitForWaiters waits until exactly n agents wait on e's server and the
// servers of more together, and fails the test when they do not within 10 s.
func waitForWaiters(t *testing.T, e *env, n int, more ...*env) {
	t.Helper()
	brokers := []*wait.Broker{e.Broker}
	for _, m := range more {
		brokers = append(brokers, m.Broker)
	}
	apitest.WaitForWaiters(t, n, brokers...)
}

// roundRobin is a small load balancer over the replicas (see
// apitest.RoundRobin).
func roundRobin(t *testing.T, replicas ...*env) (*httptest.Server, *[]atomic.Int64) {
	t.Helper()
	bases := make([]string, len(replicas))
	for i, r := range replicas {
		bases[i] = r.URL
	}
	return apitest.RoundRobin(t, bases...)
}

// connectAs opens a stateless-era session whose requests carry hdr.
func connectAs(t *testing.T, e *env, hdr map[string]string) *mcp.ClientSession {
	t.Helper()
	return testkit.ConnectWith(t, e.URL, eraStateless, testkit.Transport{Header: hdr})
}
