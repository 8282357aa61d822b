package apitest

import (
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/api"
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

// Env is one ctalk server on a real port over a fresh database, as the
// black-box tests of api and tools drive it: over MCP and the REST mirror.
type Env struct {
	URL  string
	DB   *db.DB
	Auth *auth.Service
	App  *api.Server
	// Broker wakes this server's waiting agents.
	Broker *wait.Broker
	Orgs   *orgs.Service
	Logs   *syncbuf.Buffer
}

// Options adjust a test server of StartEnv.
type Options struct {
	Auth   func(*auth.Config)
	API    func(*api.Config)
	Inbox  func(*inbox.Config)
	Wiring func(*app.Wiring)
	// SharedWith opens the server on the same database as another one.
	SharedWith *Env
	// RLS runs the server's statements on Postgres as dbtest.AppRole,
	// bound by row-level security, whatever CTALK_TEST_RLS says.
	RLS bool
}

// wiring applies o to w.
func (o Options) wiring(w *app.Wiring) {
	if o.Auth != nil {
		o.Auth(&w.Auth)
	}
	if o.API != nil {
		o.API(&w.API)
	}
	if o.Inbox != nil {
		o.Inbox(&w.Inbox)
	}
	if o.Wiring != nil {
		o.Wiring(w)
	}
}

// StartEnv runs a server on a fresh database of engine e (or the one of
// opts' SharedWith), on 127.0.0.1:0 (see Start).
func StartEnv(t testing.TB, e db.Engine, opts ...Options) *Env {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	var d *db.DB
	if o.SharedWith != nil {
		d = o.SharedWith.DB
	} else if o.RLS {
		d = dbtest.OpenRLS(t, e)
	} else {
		d = dbtest.Open(t, e)
	}
	s := Start(t, d, o.wiring)
	return &Env{URL: s.URL, DB: d, Auth: s.Auth, App: s.Server, Broker: s.Broker, Orgs: s.Orgs, Logs: s.Logs}
}

// Each runs fn on each engine of dbtest.Engines, in parallel, on servers
// started with opts, each run with a server and a database of its own, in
// the protocol era EraOf gives the engine.
func Each(t *testing.T, fn func(t *testing.T, e *Env, era string), opts ...Options) {
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			era := EraOf(engine)
			t.Run(era, func(t *testing.T) {
				fn(t, StartEnv(t, engine, opts...), era)
			})
		})
	}
}

// EraOf is the protocol era Each runs a test in on engine e: the sessions
// era on Postgres, the stateless one on SQLite. What a test of Each checks
// is a tool's or an endpoint's behaviour, which the era only carries (the
// eras differ in the transport: sessions, streams, the protocol version
// header), and the storage below is the engine's whatever the era; so a
// test runs in both eras across the two engines (CI's two passes, or one
// run on both) rather than in all four pairs, which cost twice the
// servers. The sessions era, with more goroutines per client, is the one
// the race detector's pass on Postgres watches. What does differ between
// the eras is tested in both on its own, by tests that range over
// testkit.Eras (api's transport, park, replicas, revocation and cancel
// tests, tools' wake-up and progress tests).
func EraOf(e db.Engine) string {
	if e == db.Postgres {
		return testkit.EraSessions
	}
	return testkit.EraStateless
}

// Connect opens an official-SDK client session in the given era, sending
// token as a bearer header when it is not empty.
func (e *Env) Connect(t testing.TB, era, token string) *mcp.ClientSession {
	t.Helper()
	return testkit.Connect(t, e.URL, era, token)
}

// Org registers an org with users alice (admin) and bob, carol (members)
// and returns a logged-in session per user.
func (e *Env) Org(t testing.TB, era, orgID string) map[string]*mcp.ClientSession {
	t.Helper()
	return Org(t, e.URL, era, orgID)
}

// Login returns a fresh token for a user.
func (e *Env) Login(t testing.TB, cs *mcp.ClientSession, orgID, userID string) string {
	t.Helper()
	return Login(t, cs, orgID, userID)
}

// Tokens logs the fixture's users of org in and returns their tokens.
func (e *Env) Tokens(t testing.TB, era, org string) map[string]string {
	t.Helper()
	return Tokens(t, e.URL, era, org)
}

// REST calls the REST mirror with a bearer token and decodes a JSON answer.
func (e *Env) REST(t testing.TB, token, method, path, body string) (int, map[string]any) {
	t.Helper()
	return REST(t, e.URL, token, method, path, body)
}

// WaitForEnvs waits until exactly n agents wait on e's server and the
// servers of more together, and fails the test when they do not within 10 s.
func WaitForEnvs(t *testing.T, e *Env, n int, more ...*Env) {
	t.Helper()
	brokers := []*wait.Broker{e.Broker}
	for _, m := range more {
		brokers = append(brokers, m.Broker)
	}
	WaitForWaiters(t, n, brokers...)
}

// RoundRobinEnvs is a small load balancer over the replicas (see
// RoundRobin).
func RoundRobinEnvs(t *testing.T, replicas ...*Env) (*httptest.Server, *[]atomic.Int64) {
	t.Helper()
	bases := make([]string, len(replicas))
	for i, r := range replicas {
		bases[i] = r.URL
	}
	return RoundRobin(t, bases...)
}

// ConnectAs opens a stateless-era session without a credential, opted in to
// anonymous set-up, whose requests carry hdr.
func ConnectAs(t *testing.T, e *Env, hdr map[string]string) *mcp.ClientSession {
	t.Helper()
	return testkit.ConnectWith(t, e.URL, testkit.EraStateless, testkit.Transport{Header: hdr, Setup: true})
}
