package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/internal/syncbuf"
	"github.com/ctalk/ctalk/internal/testkit"
)

func TestStdioHelp(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--help", "-h"} {
		var stdout, stderr bytes.Buffer
		if err := run(t.Context(), []string{"stdio", flag}, func(string) string { return "" }, &stdout, &stderr, nil); err != nil {
			t.Fatalf("stdio %s: %v", flag, err)
		}
		for _, want := range []string{"--url URL", "--token TOKEN", "CTALK_TOKEN", "/mcp", "120 s", `"command": "ctalk"`, `"args": ["stdio", "--url", "https://HOST"]`, "standard error"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("stdio %s does not mention %q:\n%s", flag, want, stdout.String())
			}
		}
	}
	var usage bytes.Buffer
	run(t.Context(), []string{"help"}, func(string) string { return "" }, &usage, io.Discard, nil)
	if !strings.Contains(usage.String(), "ctalk stdio --url URL") {
		t.Errorf("the usage text does not list the stdio command:\n%s", usage.String())
	}
}

func TestStdioArgs(t *testing.T) {
	t.Parallel()
	getenv := func(k string) string {
		if k == "CTALK_TOKEN" {
			return "ctalk_fromenv"
		}
		return ""
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "stdio needs --url"},
		{[]string{"--url", ""}, "stdio needs --url"},
		{[]string{"--url", "ctalk.example.com"}, "is not an http or https address"},
		{[]string{"--url", "ftp://ctalk.example.com"}, "is not an http or https address"},
		{[]string{"--url", "https://ctalk.example.com", "extra"}, `unexpected argument "extra"`},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
	} {
		err := run(t.Context(), append([]string{"stdio"}, c.args...), getenv, io.Discard, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("stdio %q: error %v; want one line containing %q", c.args, err, c.want)
		}
	}

}

// TestStdioChild is not a test: it is the "ctalk stdio" process that
// TestStdioProcess starts.
func TestStdioChild(t *testing.T) {
	if os.Getenv("CTALK_STDIO_CHILD") != "1" {
		t.Skip("runs only as the child process of TestStdioProcess")
	}
	os.Args = []string{"ctalk", "stdio", "--url", os.Getenv("CTALK_STDIO_URL")}
	main()
	// Exit before the test framework prints its verdict on standard output.
	os.Exit(0)
}

// TestStdioProcess runs "ctalk stdio" as its own process, driven over its
// real standard input and output by an MCP client, as MCP clients run it.
func TestStdioProcess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a process")
	}
	p := serveProgram(t, testEnviron(t))
	anon := testkit.Connect(t, p.URL, "", "")
	testkit.OK(t, anon, "register_organization", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": adminPW})
	testkit.OK(t, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": "alice", "name": "Alice", "password": userPW, "ownership": "x"})
	token := testkit.OK(t, anon, "login", map[string]any{"org_id": "acme", "user_id": "alice", "password": userPW})["auth_token"].(string)

	child := func(token string) (*exec.Cmd, *syncbuf.Buffer) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStdioChild$")
		cmd.Env = append(os.Environ(), "CTALK_STDIO_CHILD=1", "CTALK_STDIO_URL="+p.URL, "CTALK_TOKEN="+token)
		stderr := &syncbuf.Buffer{}
		cmd.Stderr = stderr
		return cmd, stderr
	}

	t.Run("serves", func(t *testing.T) {
		cmd, stderr := child(token)
		c := mcp.NewClient(&mcp.Implementation{Name: "stdio-test-process", Version: "1"}, nil)
		cs, err := c.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect to the bridge process: %v (stderr: %s)", err, stderr)
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "whoami"})
		if err != nil || res.IsError || !strings.Contains(testkit.Text(res), `"alice"`) {
			t.Fatalf("whoami through the bridge process: %v %s", err, testkit.Text(res))
		}
		// Closing its standard input ends the bridge, with status 0.
		if err := cs.Close(); err != nil {
			t.Fatalf("the bridge process did not exit cleanly when its input closed: %v (stderr: %s)", err, stderr)
		}
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("the bridge process exited %d", code)
		}
		if strings.Contains(stderr.String(), token) {
			t.Fatalf("the bridge process logged its token: %s", stderr)
		}
	})

	t.Run("refuses a bad token", func(t *testing.T) {
		const badToken = "ctalk_bogusbogusbogusbogusbogusbogusbogusbog"
		cmd, stderr := child(badToken)
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("the bridge process with a bad token ended with %v; want exit status 1", err)
		}
		got := stderr.String()
		if lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n"); len(lines) != 1 ||
			!strings.HasPrefix(got, "ctalk: the hosted ctalk server at "+p.URL+"/mcp refused the token") || !strings.Contains(got, "CTALK_TOKEN") {
			t.Fatalf("standard error is %q; want one line saying the token was refused and to check CTALK_TOKEN", got)
		}
		if strings.Contains(got, badToken) || stdout.Len() != 0 {
			t.Fatalf("stderr %q shows the token, or stdout %q is not empty", got, stdout.String())
		}
	})
}
