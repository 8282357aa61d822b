package tools_test

import (
	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/internal/testkit"
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

// The test server, its options and what tests do with it (see apitest.Env).
type (
	env     = apitest.Env
	options = apitest.Options
)

var (
	start          = apitest.StartEnv
	each           = apitest.Each
	waitForWaiters = apitest.WaitForEnvs
	roundRobin     = apitest.RoundRobinEnvs
	connectAs      = apitest.ConnectAs
)
