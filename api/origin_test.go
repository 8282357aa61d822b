package api_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/db"
)

// postWithHost sends an initialize request to url's /mcp with the given Host
// and, when not empty, Origin header.
func postWithHost(t *testing.T, url, host, origin string) (int, string) {
	t.Helper()
	// Anonymous set-up, opted in to: an initialize the host check lets
	// through is answered 200.
	req, err := http.NewRequest(http.MethodPost, url+"/mcp?setup=1", strings.NewReader(initializeBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /mcp: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// wantRefused requires a 403 with a JSON-RPC error whose message contains want.
func wantRefused(t *testing.T, status int, body, want string) {
	t.Helper()
	var m struct {
		JSONRPC string `json:"jsonrpc"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if status != http.StatusForbidden || json.Unmarshal([]byte(body), &m) != nil || m.JSONRPC != "2.0" || m.Error.Code == 0 || !strings.Contains(m.Error.Message, want) {
		t.Fatalf("got %d %s; want 403 with a JSON-RPC error that says %q", status, body, want)
	}
}

// TestDNSRebindingIsRefused sends requests to servers on real ports with the
// Host and Origin headers of a DNS rebinding attack, of proxies and of
// browser clients.
func TestDNSRebindingIsRefused(t *testing.T) {
	t.Parallel()
	t.Run("on loopback without PUBLIC_URL", func(t *testing.T) {
		e := start(t, db.SQLite)
		status, body := postWithHost(t, e.URL, "evil.example:8080", "http://evil.example:8080")
		wantRefused(t, status, body, `host name "evil.example"`)
		status, body = postWithHost(t, e.URL, "", "https://evil.example")
		wantRefused(t, status, body, `origin "https://evil.example"`)
		for _, c := range []struct{ host, origin string }{
			{"", ""},
			{"localhost:8080", "http://localhost:6274"}, // a local inspector
			{"127.0.0.1", "http://127.0.0.1:3000"},
			{"[::1]:8080", ""},
		} {
			if status, body := postWithHost(t, e.URL, c.host, c.origin); status != http.StatusOK {
				t.Errorf("Host %q Origin %q: %d %s, want 200", c.host, c.origin, status, body)
			}
		}
	})

	t.Run("with PUBLIC_URL behind a proxy that forwards its Host", func(t *testing.T) {
		e := start(t, db.SQLite, options{API: func(c *api.Config) {
			c.PublicURL = "https://ctalk.example.com"
			c.AllowedOrigins = []string{"https://app.example.net"}
		}})
		for _, c := range []struct{ host, origin string }{
			{"ctalk.example.com", ""},
			{"CTALK.example.com:443", "https://ctalk.example.com"},
			{"ctalk.example.com", "https://app.example.net"},
			{"localhost", ""},
		} {
			if status, body := postWithHost(t, e.URL, c.host, c.origin); status != http.StatusOK {
				t.Errorf("Host %q Origin %q: %d %s, want 200", c.host, c.origin, status, body)
			}
		}
		status, body := postWithHost(t, e.URL, "evil.example", "")
		wantRefused(t, status, body, "PUBLIC_URL")
		status, body = postWithHost(t, e.URL, "ctalk.example.com", "https://evil.example")
		wantRefused(t, status, body, "ALLOWED_ORIGINS")
		status, body = postWithHost(t, e.URL, "ctalk.example.com", "null")
		wantRefused(t, status, body, "origin")
	})

	t.Run("without PUBLIC_URL behind a proxy on another address", func(t *testing.T) {
		// Railway, Render and the compose recipe's nginx reach the server on
		// a non-loopback address with the public name in Host, which the
		// server cannot know without PUBLIC_URL.
		ip := nonLoopbackIP(t)
		e := start(t, db.SQLite)
		srv := httptest.NewUnstartedServer(e.App.Handler())
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Skipf("cannot listen on %s: %v", ip, err)
		}
		srv.Listener = ln
		srv.Start()
		defer srv.Close()
		if status, body := postWithHost(t, srv.URL, "ctalk.up.railway.app", "https://ctalk.up.railway.app"); status != http.StatusOK {
			t.Errorf("proxied request: %d %s, want 200", status, body)
		}
		status, body := postWithHost(t, srv.URL, "ctalk.up.railway.app", "https://evil.example")
		wantRefused(t, status, body, "ALLOWED_ORIGINS")
	})
}

// nonLoopbackIP returns an address of this machine that is not loopback, or
// skips the test.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				return n.IP.String()
			}
		}
	}
	t.Skip("skipping: this machine has no non-loopback IPv4 address to listen on")
	return ""
}
