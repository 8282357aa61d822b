package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/internal/testkit"
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
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeChild$")
	cmd.Env = append(os.Environ(), "CTALK_SERVE_CHILD=1", "PORT=0", "HOST=127.0.0.1", "BCRYPT_COST=4",
		"DATABASE_URL=", "RELAY_DB_PATH="+t.TempDir()+"/ctalk.db", "METRICS_TOKEN="+childMetricsToken)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := testkit.StartProcess(ctx, cmd, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	base := p.URL

	anon := testkit.Connect(t, base, "", "")
	testkit.OK(t, anon, "register_organization", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": "correct horse battery"})
	testkit.OK(t, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": "correct horse battery", "user_id": "alice", "name": "Alice", "password": "hunter22-long", "ownership": "x"})
	token := testkit.OK(t, anon, "login", map[string]any{"org_id": "acme", "user_id": "alice", "password": "hunter22-long"})["auth_token"].(string)

	const agents = 100
	var started, returned sync.WaitGroup
	results := make(chan map[string]any, agents)
	for range agents {
		started.Add(1)
		returned.Add(1)
		go func() {
			defer returned.Done()
			cs := testkit.Connect(t, base, "", token)
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
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("all %d agents waiting in the server", agents), func() (bool, error) {
		n, err := testkit.WaitingAgents(base, childMetricsToken)
		if err == nil && n != agents {
			err = fmt.Errorf("%d of %d agents wait", n, agents)
		}
		return err == nil, err
	})

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
	if _, err := p.Wait(30 * time.Second); err != nil {
		t.Fatalf("the process did not exit 0 after SIGTERM: %v", err)
	}
	t.Logf("%d waiting agents returned and the process exited %v after SIGTERM", agents, time.Since(signalled).Round(time.Millisecond))
}

const childMetricsToken = "sigterm-metrics-token-not-secret"
