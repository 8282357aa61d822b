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

	logs := e.logs.String()
	if strings.Count(logs, `"path":"/health"`) != 1 || strings.Contains(logs, `"path":"/ready"`) {
		t.Errorf("want only the POST /health of the probe paths logged:\n%s", logs)
	}
	if !strings.Contains(logs, `"method":"GET","path":"/"`) {
		t.Errorf("GET / was not logged; the log should keep other requests:\n%s", logs)
	}
}
