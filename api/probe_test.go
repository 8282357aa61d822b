package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db/dbtest"
)

// TestProbesSkipTheRequestLog checks that GET /health and GET /ready answer
// as before and write no line to the log, so that a platform probing every
// few seconds does not fill it, while other requests are still logged.
func TestProbesSkipTheRequestLog(t *testing.T) {
	t.Parallel()
	e := start(t, dbtest.Engines[0])
	for _, probe := range []struct{ path, want string }{
		{"/health", `{"status":"ok"}`},
		{"/ready", `"status":"ready"`},
	} {
		for range 3 {
			resp, err := http.Get(e.URL + probe.path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), probe.want) || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("GET %s: %d %s %q; want 200 application/json with %s", probe.path, resp.StatusCode, resp.Header.Get("Content-Type"), b, probe.want)
			}
		}
	}
	resp, err := http.Post(e.URL+"/health", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /health: %d; want 405", resp.StatusCode)
	}
	if resp, err = http.Get(e.URL + "/"); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	logs := e.Logs.String()
	if strings.Count(logs, `"path":"/health"`) != 1 || strings.Contains(logs, `"path":"/ready"`) {
		t.Errorf("want only the POST /health of the probe paths logged:\n%s", logs)
	}
	if !strings.Contains(logs, `"method":"GET","path":"/"`) {
		t.Errorf("GET / was not logged; the log should keep other requests:\n%s", logs)
	}
}

// TestProbesCarryRequestID: GET and HEAD of /health and /ready carry an
// X-Request-ID like every other response, the caller's when it sent a
// valid one.
func TestProbesCarryRequestID(t *testing.T) {
	t.Parallel()
	e := start(t, dbtest.Engines[0])
	for _, path := range []string{"/health", "/ready"} {
		for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost} {
			for _, sent := range []string{"", "probe-42", "bad id\twith tab"} {
				req, _ := http.NewRequest(method, e.URL+path, nil)
				if sent != "" {
					req.Header.Set("X-Request-ID", sent)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				got := resp.Header.Get("X-Request-ID")
				switch {
				case got == "":
					t.Errorf("%s %s (sent %q): no X-Request-ID", method, path, sent)
				case sent == "probe-42" && got != sent:
					t.Errorf("%s %s: X-Request-ID %q, want the caller's %q", method, path, got, sent)
				case sent != "probe-42" && got == sent:
					t.Errorf("%s %s: X-Request-ID %q kept an invalid id", method, path, got)
				}
			}
		}
	}
}

// TestToolCallLoggedOnce checks that a tool call leaves one line in the log,
// the tool call's, carrying what the request's line would have (request id,
// client), and that other requests to /mcp are still logged.
func TestToolCallLoggedOnce(t *testing.T) {
	t.Parallel()
	e := start(t, dbtest.Engines[0])
	alice := e.Org(t, eraSessions, "acme")["alice"]
	e.Logs.Take()
	ok(t, alice, "whoami", nil)
	logs := e.Logs.Take()
	if n := strings.Count(logs, `"msg":"tool call"`); n != 1 || !strings.Contains(logs, `"client":"127.0.0.1"`) || !strings.Contains(logs, `"request_id":"`) {
		t.Errorf("want one tool call line with its request id and client; got %d:\n%s", n, logs)
	}
	if strings.Contains(logs, `"method":"POST","path":"/mcp"`) {
		t.Errorf("the tool call's request was logged a second time:\n%s", logs)
	}
	resp, err := http.Post(e.URL+"/mcp", "application/json", strings.NewReader(`[]`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if logs := e.Logs.Take(); !strings.Contains(logs, `"method":"POST","path":"/mcp"`) {
		t.Errorf("a request to /mcp that carried no tool call was not logged:\n%s", logs)
	}
}
