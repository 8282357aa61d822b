package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/internal/demo"
	"github.com/ctalk/ctalk/internal/syncbuf"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestDemo: "ctalk demo" serves the demo organization on a database of its
// own, whatever the environment names, and prints the lines to sign in
// with, which work: alice finds two questions waiting, one with a draft.
func TestDemo(t *testing.T) {
	t.Parallel()
	env := environ{"PORT": "0", "BCRYPT_COST": "4",
		// Ignored: the demo never touches a database of the environment.
		"DATABASE_URL": "postgres://postgres@127.0.0.1:1/not_the_demo?sslmode=disable", "RELAY_DB_PATH": "/nonexistent/ctalk.db"}
	out := &syncbuf.Buffer{}
	p := startProgram(t, env, []string{"demo"}, out)
	port := p.URL[strings.LastIndex(p.URL, ":")+1:]
	for _, want := range []string{"http://localhost:" + port + "/signin", "organization acme, user alice", "password " + demo.Password,
		"claude mcp add --transport http ctalk-demo http://localhost:" + port + "/mcp"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the demo's lines lack %q:\n%s", want, out)
		}
	}

	anon := testkit.Connect(t, p.URL, "", "")
	login := testkit.OK(t, anon, "login", map[string]any{"org_id": "acme", "user_id": "alice", "password": demo.Password})
	alice := testkit.Connect(t, p.URL, testkit.EraSessions, login["auth_token"].(string))
	questions, _ := testkit.OK(t, alice, "check_inbox", nil)["questions"].([]any)
	drafts := 0
	for _, q := range questions {
		if d, _ := q.(map[string]any)["latest_draft"].(map[string]any); d != nil {
			drafts++
		}
	}
	if len(questions) != 2 || drafts != 1 {
		t.Errorf("alice's inbox holds %d questions, %d with a draft; want 2, 1:\n%v", len(questions), drafts, questions)
	}
	if err := p.stop(t); err != nil {
		t.Errorf("the demo stopped with %v", err)
	}
}

// TestDemoOnlyOnThisMachine: the demo prints everyone's password, so it
// refuses to listen on any address but a loopback one.
func TestDemoOnlyOnThisMachine(t *testing.T) {
	t.Parallel()
	for _, host := range []string{"0.0.0.0", "::", "192.0.2.1", "example.com"} {
		err := run(context.Background(), []string{"demo"}, environ{"PORT": "0", "HOST": host}.get, io.Discard, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), "only on this machine") {
			t.Errorf("HOST=%s: %v", host, err)
		}
	}
}
