// Package testkit is what the api, cmd, fault and load-harness tests share
// to drive a ctalk server from outside: the MCP client in both protocol
// eras (internal/mcpclient's, which the programs use too), tool calls with
// their checks, the child-process starter, and waiting for state the server
// reports. Only tests import it.
package testkit

import (
	"net"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/ctalk/ctalk/internal/mcpclient"
)

// The two protocol eras current MCP clients speak: with sessions, and
// stateless.
const (
	EraSessions  = mcpclient.EraSessions
	EraStateless = mcpclient.EraStateless
)

// Eras are both protocol eras, in that order.
var Eras = []string{EraSessions, EraStateless}

// Transport adds a bearer token and fixed headers to every request and
// reports each response's status; see mcpclient.Transport.
type Transport = mcpclient.Transport

// Bearer is a transport that sends token as a bearer header, or with no
// token the opt-in to anonymous set-up; see mcpclient.Bearer. A test of the
// refusal of a connection with neither uses a Transport of its own.
func Bearer(token string) Transport { return mcpclient.Bearer(token) }

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// WithAppName returns the Postgres URL raw with its connections named name,
// so that pg_stat_activity tells which server or URL a connection came
// from; PgBouncer passes the name on to the connections it opens.
func WithAppName(t testing.TB, raw, name string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// QuantileMS returns the q quantile of ds (nearest rank, rounded down) in
// milliseconds, as the benchmarks report latencies.
func QuantileMS(ds []time.Duration, q float64) float64 {
	s := slices.Sorted(slices.Values(ds))
	return float64(s[int(q*float64(len(s)-1))]) / float64(time.Millisecond)
}
