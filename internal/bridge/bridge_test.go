package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/syncbuf"
	"github.com/ctalk/ctalk/internal/testkit"
)

const (
	adminPW = "correct horse battery"
	userPW  = "hunter22-long"
)

// command is "ctalk stdio" with args, as the binary runs it, on no input.
func command(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := ParseArgs(args, getenv)
	if err != nil {
		return err
	}
	return Run(ctx, cfg, strings.NewReader(""), stdout, stderr)
}

// hostedServer is a ctalk server on a real port, built as serve builds it.
type hostedServer struct {
	URL  string
	addr string
	db   *db.DB
	stop func()
}

// startHosted serves ctalk over d on addr ("127.0.0.1:0" for any port).
func startHosted(t *testing.T, d *db.DB, addr string) *hostedServer {
	t.Helper()
	return startHostedWith(t, d, addr, false)
}

// startHostedWith is startHosted; with forgetful set, the server answers 404
// to a session id it did not issue itself, as a server that keeps sessions in
// memory does after a restart (ctalk itself accepts any session id, so that
// it needs no sticky sessions behind a load balancer).
func startHostedWith(t *testing.T, d *db.DB, addr string, forgetful bool) *hostedServer {
	t.Helper()
	acfg := auth.DefaultConfig()
	acfg.BcryptCost = 4
	assembly, err := app.Assemble(d, app.Wiring{
		API: api.Config{
			Version:        "test",
			Logger:         slog.New(slog.DiscardHandler),
			AllowOrgSignup: true,
			ProgressEvery:  50 * time.Millisecond,
		},
		Auth:  acfg,
		Inbox: inbox.DefaultConfig(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		assembly.Close(context.Background())
		t.Fatal(err)
	}
	handler := assembly.Handler()
	if forgetful {
		handler = forgetfulSessions(handler)
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			assembly.Close(ctx)
			srv.Close()
		})
	}
	t.Cleanup(stop)
	return &hostedServer{URL: "http://" + ln.Addr().String(), addr: ln.Addr().String(), db: d, stop: stop}
}

// forgetfulSessions answers 404 to requests naming a session that next did
// not issue through it.
func forgetfulSessions(next http.Handler) http.Handler {
	var issued sync.Map
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			if _, ok := issued.Load(id); !ok {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
		}
		next.ServeHTTP(sessionRecorder{w, &issued}, r)
	})
}

type sessionRecorder struct {
	http.ResponseWriter
	issued *sync.Map
}

func (s sessionRecorder) WriteHeader(code int) {
	if id := s.Header().Get("Mcp-Session-Id"); id != "" {
		s.issued.Store(id, true)
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s sessionRecorder) Write(b []byte) (int, error) {
	if id := s.Header().Get("Mcp-Session-Id"); id != "" {
		s.issued.Store(id, true)
	}
	return s.ResponseWriter.Write(b)
}

func (s sessionRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// direct connects to the hosted server without the bridge.
func (h *hostedServer) direct(t *testing.T, era, token string) *mcp.ClientSession {
	t.Helper()
	return testkit.Connect(t, h.URL, era, token)
}

// bridgeRun is a bridge running in-process on pipes, with an MCP client
// connected to its standard input and output.
type bridgeRun struct {
	cs     *mcp.ClientSession
	stdout *syncbuf.Buffer // every byte the bridge wrote to standard output
	stderr *syncbuf.Buffer
	stdin  *io.PipeWriter
	done   chan error
}

// startBridge runs "ctalk stdio" with args and CTALK_TOKEN=token, speaking
// era both to the hosted server and to its local client.
func startBridge(t *testing.T, era, token string, args []string, copts *mcp.ClientOptions) *bridgeRun {
	t.Helper()
	cfg, err := ParseArgs(args, func(k string) string {
		if k == "CTALK_TOKEN" {
			return token
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.protocolVersion = era
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &bridgeRun{stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, stdin: inW, done: make(chan error, 1)}
	go func() {
		r.done <- Run(t.Context(), cfg, inR, io.MultiWriter(outW, r.stdout), r.stderr)
		outW.Close()
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-test-local", Version: "1"}, copts)
	cs, err := c.Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connect to the bridge: %v (bridge stderr: %s)", err, r.stderr)
	}
	r.cs = cs
	t.Cleanup(func() { r.finish(t, token) })
	return r
}

// finish closes the bridge's standard input and checks that it exited
// cleanly, wrote only MCP messages to standard output and never logged the
// token.
func (r *bridgeRun) finish(t *testing.T, token string) {
	t.Helper()
	r.cs.Close()
	r.stdin.Close()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("the bridge ended with %v when its standard input closed", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the bridge did not exit when its standard input closed")
	}
	for _, line := range strings.Split(strings.TrimSuffix(r.stdout.String(), "\n"), "\n") {
		var msg struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.JSONRPC != "2.0" {
			t.Errorf("the bridge wrote a line that is not a JSON-RPC message to standard output: %q", line)
		}
	}
	if token != "" && strings.Contains(r.stderr.String(), token) {
		t.Errorf("the bridge logged its token: %s", r.stderr)
	}
}

func (r *bridgeRun) call(t *testing.T, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := r.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s through the bridge: protocol error: %v (bridge stderr: %s)", tool, err, r.stderr)
	}
	return res
}

func (r *bridgeRun) ok(t *testing.T, tool string, args map[string]any) map[string]any {
	t.Helper()
	res := r.call(t, tool, args)
	if res.IsError {
		t.Fatalf("%s through the bridge: tool error: %s", tool, testkit.Text(res))
	}
	m, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("%s through the bridge: structured content %v is not an object", tool, res.StructuredContent)
	}
	return m
}

func (r *bridgeRun) fail(t *testing.T, tool string, args map[string]any, want ...string) string {
	t.Helper()
	res := r.call(t, tool, args)
	got := testkit.Text(res)
	if !res.IsError {
		t.Fatalf("%s through the bridge succeeded with %s; want a tool error", tool, got)
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Fatalf("%s through the bridge: error %q does not contain %q", tool, got, w)
		}
	}
	return got
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBridge(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era, func(t *testing.T) {
			h := startHosted(t, dbtest.Open(t, db.SQLite), "127.0.0.1:0")
			direct := h.direct(t, era, "")

			// Without a token: the same tools and instructions as the
			// hosted server, and the public tools work.
			anon := startBridge(t, era, "", []string{"--url", h.URL}, nil)
			want, err := direct.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := anon.cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Tools) != len(want.Tools) || len(want.Tools) == 0 {
				t.Fatalf("the bridge offers %d tools; the hosted server has %d", len(got.Tools), len(want.Tools))
			}
			byName := func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) }
			slices.SortFunc(got.Tools, byName)
			slices.SortFunc(want.Tools, byName)
			for i := range want.Tools {
				if g, w := toJSON(t, got.Tools[i]), toJSON(t, want.Tools[i]); g != w {
					t.Errorf("tool through the bridge:\n got %s\nwant %s", g, w)
				}
			}
			if g, w := anon.cs.InitializeResult().Instructions, direct.InitializeResult().Instructions; g != w || w == "" {
				t.Errorf("instructions through the bridge = %q, want %q", g, w)
			}

			anon.ok(t, "register_organization", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": adminPW})
			for _, u := range []string{"alice", "bob"} {
				anon.ok(t, "register_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": u, "name": u, "password": userPW, "ownership": []string{u + "-repo"}})
			}
			login := func(user string) string {
				tok, _ := anon.ok(t, "login", map[string]any{"org_id": "acme", "user_id": user, "password": userPW})["auth_token"].(string)
				if !strings.HasPrefix(tok, "ctalk_") {
					t.Fatalf("login through the bridge returned token %q", tok)
				}
				return tok
			}
			aliceToken, bobToken := login("alice"), login("bob")
			anon.fail(t, "ask_person", map[string]any{"to_user_id": "bob", "question": "hi"}, "logged in")

			// With alice's token (from CTALK_TOKEN), to an address ending in /mcp/.
			var progress atomic.Int32
			alice := startBridge(t, era, aliceToken, []string{"--url", h.URL + "/mcp/"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					if req.Params.ProgressToken == "p1" {
						progress.Add(1)
					}
				},
			})
			viaBridge := alice.call(t, "whoami", nil)
			viaDirect, err := h.direct(t, era, aliceToken).CallTool(t.Context(), &mcp.CallToolParams{Name: "whoami"})
			if err != nil {
				t.Fatal(err)
			}
			if g, w := toJSON(t, viaBridge), toJSON(t, viaDirect); g != w {
				t.Errorf("whoami through the bridge:\n got %s\nwant %s", g, w)
			}

			asked := alice.ok(t, "ask_person", map[string]any{"to_user_id": "bob", "question": "What is the retry logic in alpha-repo?"})
			id, _ := asked["message_id"].(string)
			if id == "" || asked["status"] != "pending" || asked["to_user_id"] != "bob" {
				t.Fatalf("ask_person through the bridge = %v", asked)
			}

			// A tool error passes through unchanged, isError and all.
			errBridge := alice.call(t, "ask_person", map[string]any{"to_user_id": "nobody", "question": "hi"})
			errDirect, err := h.direct(t, era, aliceToken).CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_person", Arguments: map[string]any{"to_user_id": "nobody", "question": "hi"}})
			if err != nil {
				t.Fatal(err)
			}
			if !errBridge.IsError || !strings.Contains(testkit.Text(errBridge), `user "nobody" not found`) {
				t.Fatalf("ask_person to nobody through the bridge = %s; want the hosted server's tool error", toJSON(t, errBridge))
			}
			if g, w := toJSON(t, errBridge), toJSON(t, errDirect); g != w {
				t.Errorf("tool error through the bridge:\n got %s\nwant %s", g, w)
			}

			// A wait blocks through the bridge, relays progress, and returns
			// the answer the moment bob sends it.
			type waited struct {
				res *mcp.CallToolResult
				err error
			}
			waitDone := make(chan waited, 1)
			go func() {
				p := &mcp.CallToolParams{Name: "wait_for_reply", Arguments: map[string]any{"message_id": id, "timeout_s": 60}}
				p.SetProgressToken("p1")
				res, err := alice.cs.CallTool(t.Context(), p)
				waitDone <- waited{res, err}
			}()
			for deadline := time.Now().Add(10 * time.Second); progress.Load() < 2; {
				if time.Now().After(deadline) {
					t.Fatalf("got %d progress notifications through the bridge in 10 s; the server sends one every 50 ms", progress.Load())
				}
				time.Sleep(10 * time.Millisecond)
			}
			bob := h.direct(t, era, bobToken)
			for _, c := range []struct {
				tool string
				args map[string]any
			}{
				{"propose_response", map[string]any{"message_id": id, "draft_text": "Three retries with backoff."}},
				{"send_response", map[string]any{"message_id": id, "final_text": "Three retries with backoff."}},
			} {
				if res, err := bob.CallTool(t.Context(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args}); err != nil || res.IsError {
					t.Fatalf("%s: %v %s", c.tool, err, toJSON(t, res))
				}
			}
			var w waited
			select {
			case w = <-waitDone:
			case <-time.After(10 * time.Second):
				t.Fatal("wait_for_reply through the bridge did not return within 10 s of the answer")
			}
			if w.err != nil || w.res.IsError {
				t.Fatalf("wait_for_reply through the bridge: %v %s", w.err, toJSON(t, w.res))
			}
			if !strings.Contains(toJSON(t, w.res.StructuredContent), "Three retries with backoff.") {
				t.Fatalf("wait_for_reply through the bridge = %s; want bob's answer", toJSON(t, w.res.StructuredContent))
			}

			// A token revoked while the bridge runs gives a tool error saying
			// what to do, not a dead bridge.
			alice.ok(t, "logout", nil)
			alice.fail(t, "whoami", nil, "refused this bridge's token", "HTTP 401", "CTALK_TOKEN")
			alice.fail(t, "whoami", nil, "refused this bridge's token")
			anon.ok(t, "login", map[string]any{"org_id": "acme", "user_id": "alice", "password": userPW})
		})
	}
}

// TestServerRestart stops the hosted server under a running bridge: a
// call in the gap is a tool error saying the server could not be reached,
// and calls work again once the server is back, also when the restarted
// server has forgotten the bridge's session.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		for _, forgetful := range []bool{false, true} {
			name := era + "/sessions_kept"
			if forgetful {
				name = era + "/sessions_forgotten"
			}
			t.Run(name, func(t *testing.T) { testServerRestart(t, era, forgetful) })
		}
	}
}

func testServerRestart(t *testing.T, era string, forgetful bool) {
	d := dbtest.Open(t, db.SQLite)
	h := startHostedWith(t, d, "127.0.0.1:0", forgetful)
	anon := h.direct(t, era, "")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"register_organization", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": adminPW}},
		{"register_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": "alice", "name": "Alice", "password": userPW, "ownership": "x"}},
	} {
		if res, err := anon.CallTool(t.Context(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args}); err != nil || res.IsError {
			t.Fatalf("%s: %v %s", c.tool, err, toJSON(t, res))
		}
	}
	res, err := anon.CallTool(t.Context(), &mcp.CallToolParams{Name: "login", Arguments: map[string]any{"org_id": "acme", "user_id": "alice", "password": userPW}})
	if err != nil || res.IsError {
		t.Fatalf("login: %v %s", err, toJSON(t, res))
	}
	token := res.StructuredContent.(map[string]any)["auth_token"].(string)

	b := startBridge(t, era, token, []string{"--url", h.URL}, nil)
	b.ok(t, "whoami", nil)

	h.stop()
	b.fail(t, "whoami", nil, "could not be reached", h.URL+"/mcp")
	if msg := b.fail(t, "whoami", nil, "could not be reached", "connection refused"); strings.Contains(msg, "may have reached") {
		t.Errorf("a call refused at connect says it may have reached the server: %s", msg)
	}

	startHostedWith(t, d, h.addr, forgetful)
	if got := b.ok(t, "whoami", nil); !strings.Contains(toJSON(t, got), `"alice"`) {
		t.Fatalf("whoami after the restart = %v", got)
	}
	b.ok(t, "whoami", nil)
	// Only a server that forgot the session makes the bridge open a
	// new one (in the stateless era there is no session to forget).
	reconnected := strings.Contains(b.stderr.String(), "reconnected")
	if want := forgetful && era == testkit.EraSessions; reconnected != want {
		t.Errorf("reconnected = %v, want %v; bridge log:\n%s", reconnected, want, b.stderr)
	}
}

func TestStartFailures(t *testing.T) {
	t.Parallel()
	h := startHosted(t, dbtest.Open(t, db.SQLite), "127.0.0.1:0")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downURL := "http://" + ln.Addr().String()
	ln.Close()
	const badToken = "ctalk_bogusbogusbogusbogusbogusbogusbogusbog"

	for _, c := range []struct {
		name  string
		args  []string
		env   string
		wants []string
	}{
		{"bad token from the environment", []string{"--url", h.URL}, badToken, []string{"refused the token", "HTTP 401", "CTALK_TOKEN or --token", h.URL + "/mcp"}},
		{"bad token from the flag", []string{"--url", h.URL + "/mcp", "--token", badToken}, "", []string{"refused the token", "CTALK_TOKEN or --token"}},
		{"server down", []string{"--url", downURL}, "", []string{"could not connect to the hosted ctalk server at " + downURL + "/mcp", "connection refused", "check --url"}},
		{"not a ctalk server", []string{"--url", h.URL + "/health"}, "", []string{"could not connect", "HTTP 404", "check --url"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			getenv := func(k string) string {
				if k == "CTALK_TOKEN" {
					return c.env
				}
				return ""
			}
			err := command(t.Context(), c.args, getenv, &stdout, &stderr)
			if err == nil {
				t.Fatal("the bridge started; want a start-up error")
			}
			msg := err.Error()
			for _, w := range c.wants {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q is more than one line", msg)
			}
			if strings.Contains(msg+stderr.String(), badToken) {
				t.Errorf("the token appears in the error or the log: %q %q", msg, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("the bridge wrote %q to standard output before serving", stdout.String())
			}
		})
	}
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	getenv := func(k string) string {
		if k == "CTALK_TOKEN" {
			return "ctalk_fromenv"
		}
		return ""
	}
	for _, c := range []struct{ url, want string }{
		{"https://ctalk.example.com", "https://ctalk.example.com/mcp"},
		{"https://ctalk.example.com/", "https://ctalk.example.com/mcp"},
		{"https://ctalk.example.com/mcp", "https://ctalk.example.com/mcp"},
		{" https://ctalk.example.com/mcp/ ", "https://ctalk.example.com/mcp"},
		{"http://127.0.0.1:8080/team", "http://127.0.0.1:8080/team/mcp"},
	} {
		cfg, err := ParseArgs([]string{"--url", c.url}, getenv)
		if err != nil || cfg.Endpoint != c.want {
			t.Errorf("--url %q: endpoint %q, %v; want %q", c.url, cfg.Endpoint, err, c.want)
		}
	}
	cfg, _ := ParseArgs([]string{"--url", "https://h"}, getenv)
	if cfg.Token != "ctalk_fromenv" {
		t.Errorf("token %q; want the one from CTALK_TOKEN", cfg.Token)
	}
	cfg, _ = ParseArgs([]string{"--url", "https://h", "--token", "ctalk_fromflag"}, getenv)
	if cfg.Token != "ctalk_fromflag" {
		t.Errorf("token %q; want the one from --token, which wins over CTALK_TOKEN", cfg.Token)
	}
}

// TestNoShortTimeout guards the waiting tools: nothing between the
// bridge and the hosted server may give up on a call before 120 s.
func TestNoShortTimeout(t *testing.T) {
	t.Parallel()
	b := newBridge(Config{Endpoint: "https://h/mcp"}, slog.New(slog.DiscardHandler))
	c := b.httpClient(&remoteHTTP{base: b.base})
	if c.Timeout != 0 && c.Timeout < 120*time.Second {
		t.Errorf("the HTTP client times out after %v", c.Timeout)
	}
	tr := b.base.(*http.Transport)
	if d := tr.ResponseHeaderTimeout; d != 0 && d < 120*time.Second {
		t.Errorf("the HTTP transport waits only %v for response headers", d)
	}
}
