package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/internal/scrape"
)

// TestServeChild is not a test: it is the server process that
// TestSIGTERMWithWaitingAgents starts and signals.
func TestServeChild(t *testing.T) {
	if os.Getenv("CTALK_SERVE_CHILD") != "1" {
		t.Skip("runs only as the child process of TestSIGTERMWithWaitingAgents")
	}
	os.Args = []string{"ctalk"}
	main()
}

// TestSIGTERMWithWaitingAgents runs the real program in its own process with
// 100 agents waiting, sends it SIGTERM, and checks that every wait returns
// promptly and the process exits 0.
func TestSIGTERMWithWaitingAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeChild$")
	cmd.Env = append(os.Environ(), "CTALK_SERVE_CHILD=1", "PORT=0", "HOST=127.0.0.1", "BCRYPT_COST=4",
		"DATABASE_URL=", "RELAY_DB_PATH="+t.TempDir()+"/ctalk.db", "METRICS_TOKEN="+childMetricsToken)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	// The start-up log line names the address.
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "ctalk listening" {
				addr <- line.Addr
			}
		}
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case <-time.After(60 * time.Second):
		t.Fatal("the server did not start")
	}

	anon := connect(t, base, "")
	callOK(t, anon, "register_organization", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": "correct horse battery"})
	callOK(t, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": "correct horse battery", "user_id": "alice", "name": "Alice", "password": "hunter22-long", "ownership": "x"})
	token := callOK(t, anon, "login", map[string]any{"org_id": "acme", "user_id": "alice", "password": "hunter22-long"})["auth_token"].(string)

	const agents = 100
	var started, returned sync.WaitGroup
	results := make(chan map[string]any, agents)
	for range agents {
		started.Add(1)
		returned.Add(1)
		go func() {
			defer returned.Done()
			cs := connect(t, base, token)
			started.Done()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait_for_inbox", Arguments: map[string]any{"timeout_s": 110}})
			if err != nil || res.IsError {
				t.Errorf("wait_for_inbox during shutdown: %v %v", err, res)
				return
			}
			results <- res.StructuredContent.(map[string]any)
		}()
	}
	started.Wait()
	// SIGTERM must find every agent waiting in the server.
	for deadline := time.Now().Add(30 * time.Second); ; {
		n, err := scrape.WaitingAgents(base, childMetricsToken)
		if err == nil && n == agents {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d agents wait in the server 30 s after they called (%v)", n, agents, err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { returned.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("waiting agents did not return within 20 s of SIGTERM")
	}
	close(results)
	n := 0
	for r := range results {
		n++
		if !strings.Contains(r["next_step"].(string), "restarting") {
			t.Errorf("a wait ended by shutdown says %q; it should tell the agent to call again", r["next_step"])
		}
	}
	if n != agents {
		t.Fatalf("%d of %d waits returned a result", n, agents)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the process did not exit 0 after SIGTERM: %v", err)
	}
	t.Logf("%d waiting agents returned and the process exited %v after SIGTERM", agents, time.Since(signalled).Round(time.Millisecond))
}

const childMetricsToken = "sigterm-metrics-token-not-secret"

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+string(b))
	}
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, base, token string) *mcp.ClientSession {
	c := mcp.NewClient(&mcp.Implementation{Name: "sigterm-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer(token)}, DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Error(err)
		return nil
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callOK(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", tool, err, res)
	}
	return res.StructuredContent.(map[string]any)
}
