// Package testkit is what the api, cmd, fault and load-harness tests share
// to drive a ctalk server from outside: the MCP client in both protocol
// eras, tool calls with their checks, the child-process starter, and
// waiting for state the server reports. It is an ordinary package so that
// the load harness, a command, can use it too; nothing in the server does.
package testkit

import (
	"net"
	"net/http"
	"net/url"
	"testing"
)

// The two protocol eras current MCP clients speak: with sessions, and
// stateless.
const (
	EraSessions  = "2025-11-25"
	EraStateless = "2026-07-28"
)

// Eras are both protocol eras, in that order.
var Eras = []string{EraSessions, EraStateless}

// Transport adds a bearer token and fixed headers to every request and
// reports each response's status.
type Transport struct {
	// Token is sent as "Authorization: Bearer Token" when it is not empty.
	Token string
	// Header is set on every request.
	Header map[string]string
	// Next sends the request; nil means http.DefaultTransport.
	Next http.RoundTripper
	// Status, when set, is called with the status of every response.
	Status func(code int)
}

// Bearer is a transport that sends token as a bearer header.
func Bearer(token string) Transport { return Transport{Token: token} }

// RoundTrip sends r with the transport's headers.
func (tr Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if tr.Token != "" || len(tr.Header) > 0 {
		r = r.Clone(r.Context())
		for k, v := range tr.Header {
			r.Header.Set(k, v)
		}
		if tr.Token != "" {
			r.Header.Set("Authorization", "Bearer "+tr.Token)
		}
	}
	next := tr.Next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(r)
	if err == nil && tr.Status != nil {
		tr.Status(resp.StatusCode)
	}
	return resp, err
}

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
