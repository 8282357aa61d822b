package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/internal/syncbuf"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestLocalChild is not a test: it is a "ctalk stdio --local" process that
// TestLocalStore starts, with the arguments in CTALK_LOCAL_ARGS.
func TestLocalChild(t *testing.T) {
	if os.Getenv("CTALK_LOCAL_CHILD") != "1" {
		t.Skip("runs only as a child process of TestLocalStore")
	}
	os.Args = append([]string{"ctalk", "stdio", "--local"}, strings.Fields(os.Getenv("CTALK_LOCAL_ARGS"))...)
	main()
	os.Exit(0)
}

// localAgent is a "ctalk stdio --local" process, driven over its real
// standard input and output by the official SDK's client.
type localAgent struct {
	cs     *mcp.ClientSession
	cmd    *exec.Cmd
	stderr *syncbuf.Buffer
}

// startLocal starts an agent named as on the store.
func startLocal(t *testing.T, store, as string) *localAgent {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLocalChild$")
	cmd.Env = append(os.Environ(), "CTALK_LOCAL_CHILD=1", "CTALK_LOCAL_ARGS=--as "+as+" --store "+store)
	a := &localAgent{cmd: cmd, stderr: &syncbuf.Buffer{}}
	cmd.Stderr = a.stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "local-test-" + as, Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("start the local agent %s: %v (stderr: %s)", as, err, a.stderr)
	}
	a.cs = cs
	t.Cleanup(func() { cs.Close() })
	return a
}

// TestLocalStore: agents of one machine, each its own "ctalk stdio
// --local" process on one store, started together, are members of the
// local organization under the names they gave; they ask and answer each
// other, a waiting agent wakes when another process answers, concurrent
// askers lose nothing, and an agent killed in the middle of writing leaves
// the store working for the others.
func TestLocalStore(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	store := filepath.Join(t.TempDir(), "shared", "local.db")
	agents := map[string]*localAgent{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, as := range []string{"alice", "bob", "carol"} {
		wg.Go(func() {
			a := startLocal(t, store, as)
			mu.Lock()
			agents[as] = a
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	alice, bob, carol := agents["alice"].cs, agents["bob"].cs, agents["carol"].cs
	if who := testkit.OK(t, bob, "whoami", nil); !strings.Contains(fmt.Sprint(who), "bob") || !strings.Contains(fmt.Sprint(who), "local") {
		t.Fatalf("bob's whoami = %v", who)
	}

	// alice asks bob, and waits for the answer in her process while bob's
	// answers it.
	asked := testkit.OK(t, alice, "ask_person", map[string]any{"to_user_id": "bob", "question": "Which port does the staging proxy listen on?"})
	id, _ := asked["message_id"].(string)
	if id == "" {
		t.Fatalf("ask_person = %v", asked)
	}
	replied := make(chan map[string]any, 1)
	go func() {
		replied <- testkit.OK(t, alice, "wait_for_reply", map[string]any{"message_id": id, "timeout_s": 60})
	}()
	inbox := testkit.OK(t, bob, "check_inbox", nil)
	if !strings.Contains(fmt.Sprint(inbox["questions"]), "staging proxy") {
		t.Fatalf("bob's inbox = %v", inbox)
	}
	const answer = "Port 8443, behind the VPN."
	testkit.OK(t, bob, "propose_response", map[string]any{"message_id": id, "draft_text": answer})
	// Give alice's wait time to park, so that it is woken, not answered
	// at once.
	time.Sleep(300 * time.Millisecond)
	sent := time.Now()
	testkit.OK(t, bob, "send_response", map[string]any{"message_id": id, "final_text": answer})
	select {
	case r := <-replied:
		if !strings.Contains(fmt.Sprint(r), answer) {
			t.Fatalf("alice's wait_for_reply = %v", r)
		}
		t.Logf("the answer reached the waiting agent's process %v after it was sent", time.Since(sent).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("alice's wait_for_reply was not woken by bob's answer from another process")
	}

	// alice and carol ask bob at once from their processes: every
	// question arrives once.
	const each = 4
	var asks sync.WaitGroup
	for _, from := range []*mcp.ClientSession{alice, carol} {
		asks.Go(func() {
			for i := range each {
				testkit.OK(t, from, "ask_person", map[string]any{"to_user_id": "bob", "question": fmt.Sprintf("Concurrent question %d about the deploy window, from %p?", i, from)})
			}
		})
	}
	asks.Wait()
	inbox = testkit.OK(t, bob, "check_inbox", map[string]any{"limit": 50})
	if qs, _ := inbox["questions"].([]any); len(qs) != 2*each {
		t.Errorf("bob's inbox holds %d questions after %d concurrent asks", len(qs), 2*each)
	}

	// dave is killed while asking in a loop; the others go on.
	dave := startLocal(t, store, "dave")
	stop := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			args := map[string]any{"to_user_id": "carol", "question": fmt.Sprintf("Killed midway, question %d about the release notes?", i)}
			if _, err := dave.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_person", Arguments: args}); err != nil {
				return
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	if err := dave.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	testkit.OK(t, carol, "check_inbox", map[string]any{"limit": 50})
	erin := startLocal(t, store, "erin")
	testkit.OK(t, erin.cs, "ask_person", map[string]any{"to_user_id": "carol", "question": "Is the store still writable after a crash?"})

	// Closing an agent's input ends its process cleanly.
	if err := agents["bob"].cs.Close(); err != nil {
		t.Errorf("bob's process did not end cleanly: %v (stderr: %s)", err, agents["bob"].stderr)
	}
	if fi, err := os.Stat(filepath.Dir(store)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the store's folder: %v, %v; want it readable by its owner alone", fi.Mode().Perm(), err)
	}
}

// TestLocalArgs: the flags and their defaults.
func TestLocalArgs(t *testing.T) {
	t.Parallel()
	env := environ{"CTALK_AS": "Builder", "XDG_DATA_HOME": "/data"}
	c, err := parseLocal("stdio", []string{"--local"}, env.get)
	if err != nil || c.As != "builder" || c.Store != "/data/ctalk/local.db" {
		t.Errorf("defaults: %+v, %v", c, err)
	}
	c, err = parseLocal("stdio", []string{"--local", "--as", "reviewer", "--store", "/tmp/x.db"}, env.get)
	if err != nil || c.As != "reviewer" || c.Store != "/tmp/x.db" {
		t.Errorf("flags: %+v, %v", c, err)
	}
	for _, args := range [][]string{{"--local", "--as", "not a name"}, {"--local", "--as", "x", "extra"}} {
		if _, err := parseLocal("stdio", args, env.get); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	var out bytes.Buffer
	if err := run(t.Context(), []string{"stdio", "--local", "--help"}, env.get, &out, &out, nil); err != nil || !strings.Contains(out.String(), "--as NAME") {
		t.Errorf("stdio --local --help: %v\n%s", err, out.String())
	}
}

// TestPrivateListener: the app of "ctalk stdio --local" listens on a Unix
// socket in a folder of the machine account's alone, not on a port that
// every account of the machine could call, and the folder goes with it.
func TestPrivateListener(t *testing.T) {
	ln, err := privateListener()
	if err != nil {
		t.Fatal(err)
	}
	if ln.Addr().Network() != "unix" {
		t.Fatalf("listens on %s %s, want a Unix socket", ln.Addr().Network(), ln.Addr())
	}
	dir := filepath.Dir(ln.Addr().String())
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("the socket's folder: %v, %v; want drwx------", info.Mode(), err)
	}
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Write([]byte("ok"))
			c.Close()
		}
	}()
	c, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(c)
	c.Close()
	if string(got) != "ok" {
		t.Fatalf("read %q through the socket", got)
	}
	ln.Close()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket's folder is still there after Close (%v)", err)
	}
}
