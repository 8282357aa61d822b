// Package faults_test proves that faults lose nothing: it runs the real ctalk
// binary as a child process, drives it with concurrent agents over MCP, breaks
// it (kill -9, SIGTERM, a Postgres crash) and then reads the database to check
// that every acknowledged question is stored exactly once.
//
// The kill -9 and SIGTERM tests are fast and touch only their own database,
// so they run in the ordinary suite. The Postgres restart breaks every other
// user of the server, so it runs only with CTALK_FAULTS=1, from faults/run.sh.
package faults_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/syncbuf"
	"github.com/ctalk/ctalk/internal/testkit"
)

var (
	binDir   string
	binOnce  sync.Once
	binPath  string
	binError error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ctalk-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// serverBinary builds ./cmd/ctalk once per test run. The faults need a real
// process to kill, so the test binary cannot serve in-process.
func serverBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		start := time.Now()
		defer func() { t.Logf("built ./cmd/ctalk in %s", time.Since(start).Round(time.Millisecond)) }()
		p := filepath.Join(binDir, "ctalk")
		cmd := exec.Command("go", "build", "-o", p, "github.com/ctalk/ctalk/cmd/ctalk")
		if out, err := cmd.CombinedOutput(); err != nil {
			binError = fmt.Errorf("go build ./cmd/ctalk: %v\n%s", err, out)
			return
		}
		binPath = p
	})
	if binError != nil {
		t.Fatal(binError)
	}
	return binPath
}

// eachEngine runs fn on every engine, in parallel with each other and with
// the other tests: each starts its own servers on its own database.
func eachEngine(t *testing.T, fn func(t *testing.T, e db.Engine)) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	t.Parallel()
	for _, e := range dbtest.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			fn(t, e)
		})
	}
}

// database is where a test's servers keep their data: one engine, one fresh
// SQLite file or Postgres schema, shared by every server the test starts.
type database struct {
	engine db.Engine
	cfg    db.Config
}

func newDatabase(t *testing.T, e db.Engine) database {
	t.Helper()
	return database{engine: e, cfg: dbtest.Config(t, e)}
}

// env is the child's configuration for this database.
func (d database) env() []string {
	if d.engine == db.Postgres {
		// The role that row-level security binds, when the tests run
		// under it (dbtest.RLS), as DATABASE_ROLE sets it in production.
		return []string{"DATABASE_URL=" + d.cfg.URL, "DATABASE_ROLE=" + d.cfg.Role, "RELAY_DB_PATH="}
	}
	return []string{"DATABASE_URL=", "RELAY_DB_PATH=" + d.cfg.Path}
}

// open connects to the database directly, to read what the servers stored.
func (d database) open(t *testing.T) *db.DB {
	t.Helper()
	conn, err := db.Connect(dbtest.Operator(), d.cfg)
	if err != nil {
		t.Fatalf("open the %s database to check it: %v", d.engine, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// server is one ctalk process.
type server struct {
	*testkit.Process
	t    *testing.T
	name string
	base string // http://127.0.0.1:port
	log  *syncbuf.Buffer
}

// startServer starts ctalk on an ephemeral loopback port with the given
// database and extra environment, and returns once it listens.
func startServer(t *testing.T, name string, d database, extra ...string) *server {
	t.Helper()
	env := append(os.Environ(),
		"PORT=0", "HOST=127.0.0.1", "BCRYPT_COST=4", "PUBLIC_URL=",
		// Agents here ask far faster than people do; the limits are tested elsewhere.
		"ASKS_PER_MINUTE=100000", "LOOP_MAX_QUESTIONS=100000",
		"METRICS_TOKEN="+metricsToken,
	)
	env = append(env, d.env()...)
	env = append(env, extra...)
	s := &server{t: t, name: name, log: &syncbuf.Buffer{}}
	cmd := exec.Command(serverBinary(t))
	cmd.Env = env
	cmd.Stdout = s.log
	started := time.Now()
	ctx, cancel := context.WithTimeout(dbtest.Operator(), 30*time.Second)
	defer cancel()
	p, err := testkit.StartProcess(ctx, cmd, s.log)
	if err != nil {
		t.Fatalf("server %s: %v\n%s", name, err, tail(s.log, 40))
	}
	s.Process, s.base = p, p.URL
	t.Logf("server %s listening after %s", name, time.Since(started).Round(time.Millisecond))
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("log of server %s (last 60 lines):\n%s", s.name, tail(s.log, 60))
		}
		if dir := os.Getenv("CTALK_FAULTS_LOGDIR"); dir != "" {
			name := strings.NewReplacer("/", "_").Replace(t.Name()) + "-" + s.name + ".log"
			os.WriteFile(filepath.Join(dir, name), []byte(s.log.String()), 0o644)
		}
	})
	return s
}

// kill sends SIGKILL and waits for the process to be gone.
func (s *server) kill() {
	s.t.Helper()
	if err := s.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		s.t.Fatalf("kill -9 %s: %v", s.name, err)
	}
	if err := s.wait(10 * time.Second); err == nil {
		s.t.Fatalf("server %s exited cleanly after kill -9?", s.name)
	}
}

// wait waits up to d for the process to exit and returns its exit status.
func (s *server) wait(d time.Duration) error {
	s.t.Helper()
	exited, err := s.Wait(d)
	if !exited {
		s.t.Fatalf("server %s: %v", s.name, err)
	}
	return err
}

const metricsToken = "faults-metrics-token-not-secret"

// waiting returns how many agents wait in the server, from /metrics.
func (s *server) waiting() (int, error) {
	return testkit.WaitingAgents(s.base, metricsToken)
}

// waitForWaiting waits until at least n agents wait in the server, as its
// /metrics reports, and fails the test when they do not within d.
func (s *server) waitForWaiting(n int, d time.Duration) {
	s.t.Helper()
	testkit.WaitFor(s.t, d, fmt.Sprintf("%d waits reaching server %s", n, s.name), func() (bool, error) {
		got, err := s.waiting()
		if err == nil && got < n {
			err = fmt.Errorf("only %d of %d waits arrived", got, n)
		}
		return err == nil, err
	})
}

// ready returns the status of GET /ready.
func (s *server) ready(ctx context.Context) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/ready", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, strings.TrimSpace(b.String()), nil
}

// tail returns the last n lines of the log.
func tail(b *syncbuf.Buffer, n int) string {
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// statusLog records every HTTP status /mcp answers, so that a test can
// assert which ones it saw.
type statusLog struct {
	mu       sync.Mutex
	statuses map[int]int
	at5xx    []time.Time
}

func (l *statusLog) record(code int) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.statuses == nil {
		l.statuses = map[int]int{}
	}
	l.statuses[code]++
	if code >= 500 {
		l.at5xx = append(l.at5xx, time.Now())
	}
}

func (l *statusLog) serverErrors() map[int]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[int]int{}
	for code, n := range l.statuses {
		if code >= 500 {
			out[code] = n
		}
	}
	return out
}

// The two protocol eras that clients speak: with sessions, and stateless.
const (
	eraSessions  = testkit.EraSessions
	eraStateless = testkit.EraStateless
)

// eraOf spreads agents over both eras.
func eraOf(i int) string {
	if i%2 == 0 {
		return eraSessions
	}
	return eraStateless
}

// connect opens an MCP client session in the given protocol era as the
// holder of token (with none, opted in to anonymous set-up). The client does not retry: a test wants to see each
// failure as it happened.
func connect(ctx context.Context, base, token, era string, status *statusLog) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tr := testkit.Bearer(token)
	tr.Status = status.record
	return testkit.Dial(ctx, base, era, tr)
}

func mustConnect(t *testing.T, base, token, era string, status *statusLog) *mcp.ClientSession {
	t.Helper()
	cs, err := connect(dbtest.Operator(), base, token, era, status)
	if err != nil {
		t.Fatalf("connect to %s: %v", base, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// outcome is how one tool call ended.
type outcome struct {
	tool       string
	start, end time.Time
	res        *mcp.CallToolResult
	err        error // transport or protocol error: no tool result
}

func (o outcome) ok() bool { return o.err == nil && o.res != nil && !o.res.IsError }

func (o outcome) toolError() bool { return o.err == nil && o.res != nil && o.res.IsError }

// text is the tool result's text, or the error.
func (o outcome) text() string {
	if o.err != nil {
		return o.err.Error()
	}
	return testkit.Text(o.res)
}

func (o outcome) structured() map[string]any {
	if o.res == nil {
		return nil
	}
	m, _ := o.res.StructuredContent.(map[string]any)
	return m
}

func (o outcome) String() string {
	kind := "ok"
	switch {
	case o.err != nil:
		kind = "transport error"
	case o.res.IsError:
		kind = "tool error"
	}
	return fmt.Sprintf("%s after %s: %s: %s", o.tool, o.end.Sub(o.start).Round(time.Millisecond), kind, truncate(o.text(), 300))
}

func call(ctx context.Context, cs *mcp.ClientSession, timeout time.Duration, tool string, args map[string]any) outcome {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	o := outcome{tool: tool, start: time.Now()}
	o.res, o.err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	o.end = time.Now()
	if o.err == nil && o.res == nil {
		o.err = fmt.Errorf("no result and no error")
	}
	return o
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// org is the organization every fault test uses: one recipient, "boss",
// asked by several agents.
type org struct {
	id        string
	bossToken string
	askers    []string // user ids
	tokens    []string // the askers' tokens, by index
}

const adminPassword = "correct horse battery staple"

// setupOrg registers an org with a recipient and n askers through the
// server's own tools, and logs each of them in.
func setupOrg(t *testing.T, base string, n int) *org {
	t.Helper()
	start := time.Now()
	defer func() {
		t.Logf("registered the org and %d users in %s", n+1, time.Since(start).Round(time.Millisecond))
	}()
	anon := mustConnect(t, base, "", eraSessions, nil)
	o := &org{id: "acme"}
	testkit.OK(t, anon, "register_organization", map[string]any{"org_id": o.id, "name": "Acme", "admin_password": adminPassword})
	o.bossToken = o.addUser(t, anon, "boss")
	for i := range n {
		u := fmt.Sprintf("a%d", i)
		o.askers = append(o.askers, u)
		o.tokens = append(o.tokens, o.addUser(t, anon, u))
	}
	return o
}

// addUser registers a user in the org and returns a token of theirs.
func (o *org) addUser(t *testing.T, anon *mcp.ClientSession, user string) string {
	t.Helper()
	testkit.OK(t, anon, "register_user", map[string]any{"org_id": o.id, "admin_password": adminPassword,
		"user_id": user, "name": user, "password": "password-of-" + user, "ownership": "faults"})
	return testkit.OK(t, anon, "login", map[string]any{"org_id": o.id, "user_id": user, "password": "password-of-" + user})["auth_token"].(string)
}

// askText is the question asked under key: a retry must send the same text.
func askText(key string) string { return "fault test question " + key }

func askArgs(key string) map[string]any {
	return map[string]any{"to_user_id": "boss", "question": askText(key), "idempotency_key": key}
}

// ledger is what the driver knows about its asks: every key it tried, and
// the message id of every ask the server acknowledged.
type ledger struct {
	mu        sync.Mutex
	attempted map[string]int    // key -> asker index
	acked     map[string]string // key -> message id
	outcomes  []outcome
}

func newLedger() *ledger {
	return &ledger{attempted: map[string]int{}, acked: map[string]string{}}
}

func (l *ledger) attempt(key string, asker int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempted[key] = asker
}

func (l *ledger) record(key string, o outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outcomes = append(l.outcomes, o)
	if o.ok() {
		id, _ := o.structured()["message_id"].(string)
		if id != "" {
			l.acked[key] = id
		}
	}
}

func (l *ledger) counts() (attempted, acked int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.attempted), len(l.acked)
}

// askLoop has asker i ask with fresh keys until stop says so or ctx ends.
// It returns after its last call has returned.
func askLoop(ctx context.Context, cs *mcp.ClientSession, i int, l *ledger, timeout time.Duration, pause time.Duration, stop func(outcome) bool) {
	for n := 0; ctx.Err() == nil; n++ {
		key := fmt.Sprintf("a%d-%04d", i, n)
		l.attempt(key, i)
		o := call(ctx, cs, timeout, "ask_person", askArgs(key))
		if ctx.Err() != nil && !o.ok() {
			return // the driver stopped; the ask stays attempted, unacknowledged
		}
		l.record(key, o)
		if stop(o) {
			return
		}
		if pause > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
		}
	}
}

// storedRow is one question to boss, as stored. Questions to others are
// not the driver's.
type storedRow struct {
	id, asker, key string
}

func storedQuestions(t *testing.T, conn *db.DB, orgID string) []storedRow {
	t.Helper()
	rows, err := conn.Query(dbtest.Operator(), `SELECT id, asker_id, COALESCE(idempotency_key, '') FROM questions WHERE org_id = $1 AND recipient_id = 'boss'`, orgID)
	if err != nil {
		t.Fatalf("read questions: %v", err)
	}
	defer rows.Close()
	var out []storedRow
	for rows.Next() {
		var r storedRow
		if err := rows.Scan(&r.id, &r.asker, &r.key); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkNothingLost reads the questions table and checks, for every ask the
// driver attempted: each acknowledged message id is stored exactly once,
// under its key; no key is stored twice; nothing is stored that was not
// asked. Then, through the running server s, it retries every attempted ask
// with its key and checks that each ends with exactly one row: the retry of
// a stored ask returns the stored id, and the retry of one that was lost
// stores it once.
func checkNothingLost(t *testing.T, d database, s *server, o *org, l *ledger) {
	t.Helper()
	conn := d.open(t)
	l.mu.Lock()
	defer l.mu.Unlock()

	rows := storedQuestions(t, conn, o.id)
	byID := map[string][]storedRow{}
	byKey := map[string][]storedRow{}
	for _, r := range rows {
		byID[r.id] = append(byID[r.id], r)
		byKey[r.key] = append(byKey[r.key], r)
	}
	for key, id := range l.acked {
		switch got := byID[id]; {
		case len(got) == 0:
			t.Errorf("LOST: ask %s was acknowledged as %s but is not stored", key, id)
		case len(got) > 1:
			t.Errorf("DUPLICATED: message %s is stored %d times", id, len(got))
		case got[0].key != key:
			t.Errorf("message %s is stored under key %q, but was acknowledged for key %q", id, got[0].key, key)
		}
	}
	for key, rs := range byKey {
		if len(rs) > 1 {
			t.Errorf("DUPLICATED: idempotency key %q is stored %d times", key, len(rs))
		}
		if _, ok := l.attempted[key]; !ok {
			t.Errorf("stored question %s has key %q, which the driver never used", rs[0].id, key)
		}
	}
	unacked := 0
	committedUnacked := 0
	for key := range l.attempted {
		if _, ok := l.acked[key]; !ok {
			unacked++
			if len(byKey[key]) > 0 {
				committedUnacked++
			}
		}
	}
	t.Logf("%d asks attempted, %d acknowledged, %d stored; of the %d unacknowledged, %d had been stored anyway",
		len(l.attempted), len(l.acked), len(rows), unacked, committedUnacked)
	if t.Failed() {
		return
	}

	// Retry every attempted ask, acknowledged or not, by its own asker.
	keys := make([]string, 0, len(l.attempted))
	for k := range l.attempted {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	sessions := make([]*mcp.ClientSession, len(o.tokens))
	for i, tok := range o.tokens {
		sessions[i] = mustConnect(t, s.base, tok, eraOf(i), nil)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range o.tokens {
		wg.Go(func() {
			for _, key := range keys {
				if l.attempted[key] != i {
					continue
				}
				res := call(dbtest.Operator(), sessions[i], 30*time.Second, "ask_person", askArgs(key))
				mu.Lock()
				if !res.ok() {
					t.Errorf("retry of %s: %v", key, res)
				} else {
					id := res.structured()["message_id"].(string)
					if want, ok := l.acked[key]; ok && id != want {
						t.Errorf("retry of acknowledged %s returned %s, not its original %s", key, id, want)
					}
					if rs := byKey[key]; len(rs) == 1 && id != rs[0].id {
						t.Errorf("retry of stored %s returned %s, not the stored %s", key, id, rs[0].id)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	rows = storedQuestions(t, conn, o.id)
	seen := map[string]int{}
	for _, r := range rows {
		seen[r.key]++
	}
	for _, key := range keys {
		if seen[key] != 1 {
			t.Errorf("after retrying, key %s is stored %d times; want exactly once", key, seen[key])
		}
	}
	if len(rows) != len(keys) {
		t.Errorf("after retrying, %d questions are stored; want one per attempted key, %d", len(rows), len(keys))
	}
}
