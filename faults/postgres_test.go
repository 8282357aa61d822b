package faults_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// outage is how long Postgres stays down: long enough for many calls and
// readiness probes to meet it.
const outage = 4 * time.Second

// wakeWithin bounds a cross-replica wake-up. It is well under the waiters'
// 10 s safety re-check, so only a LISTEN notification can meet it.
const wakeWithin = 3 * time.Second

// TestPostgresRestart crashes Postgres (immediate shutdown, then start) while
// agents ask, read and wait through two ctalk replicas, and checks that:
//
//   - during the outage every tool call ends with a tool error that says
//     "unavailable" and "retry" and never "internal error"; /mcp answers
//     every request with a JSON-RPC result: no transport error and no HTTP
//     5xx at all; GET /ready answers 503;
//   - afterwards the same processes recover by themselves: /ready is 200,
//     every call succeeds, and each replica's LISTEN connection is back, so
//     an ask through one replica wakes an agent waiting on the other within
//     3 s;
//   - every acknowledged ask is stored exactly once, and retrying the others
//     with their keys stores each exactly once.
//
// It stops the whole Postgres server, so it runs only with CTALK_FAULTS=1,
// when nothing else uses it (faults/run.sh).
func TestPostgresRestart(t *testing.T) {
	if os.Getenv("CTALK_FAULTS") != "1" {
		t.Skip("restarts the Postgres server, which breaks every other test using it: set CTALK_FAULTS=1 (faults/run.sh does) when nothing else uses it")
	}
	if os.Getenv("TEST_DATABASE_URL") == "" {
		t.Fatal("CTALK_FAULTS=1 needs TEST_DATABASE_URL")
	}
	cluster := postgresCluster(t)

	const askers = 6
	d := newDatabase(t, db.Postgres)
	a := startServer(t, "A", d, "DATABASE_URL="+testkit.WithAppName(t, d.cfg.URL, "ctalk-faults-a"))
	b := startServer(t, "B", d, "DATABASE_URL="+testkit.WithAppName(t, d.cfg.URL, "ctalk-faults-b"))
	o := setupOrg(t, a.base, askers)
	sleeperToken := o.addUser(t, mustConnect(t, a.base, "", eraSessions, nil), "sleeper")

	status := &statusLog{} // every /mcp response during the load
	wakeBefore := wakeRounds(t, a, b, o, sleeperToken, 2)
	t.Logf("before the fault, asks through B woke waiters on A in %v", wakeBefore)

	// The load: askers on both replicas; on A, an inbox reader, two waiters,
	// whoami, and new clients connecting.
	l := newLedger()
	ctx, stopLoad := context.WithCancel(dbtest.Operator())
	defer stopLoad()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		others []outcome
	)
	for i := range askers {
		s := a
		if i%2 == 1 {
			s = b
		}
		cs := mustConnect(t, s.base, o.tokens[i], eraOf(i), status)
		wg.Go(func() {
			askLoop(ctx, cs, i, l, 15*time.Second, 20*time.Millisecond, func(outcome) bool { return false })
		})
	}
	loop := func(token, era, tool string, args map[string]any) {
		cs := mustConnect(t, a.base, token, era, status)
		wg.Go(func() {
			for ctx.Err() == nil {
				r := call(ctx, cs, 40*time.Second, tool, args)
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				others = append(others, r)
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	loop(o.bossToken, eraSessions, "check_inbox", map[string]any{"limit": 5})
	loop(o.bossToken, eraStateless, "wait_for_inbox", map[string]any{"timeout_s": 2})
	// Nobody asks the sleeper: its waits span the outage.
	loop(sleeperToken, eraSessions, "wait_for_inbox", map[string]any{"timeout_s": 20})
	loop(o.tokens[0], eraStateless, "whoami", map[string]any{})
	// A new client, connecting with its token in the header, and calling.
	wg.Go(func() {
		for n := 0; ctx.Err() == nil; n++ {
			start := time.Now()
			cs, err := connect(ctx, a.base, o.tokens[1], eraOf(n), status)
			if ctx.Err() != nil {
				return
			}
			r := outcome{tool: "initialize", start: start, end: time.Now(), err: err}
			if err == nil {
				r = call(ctx, cs, 15*time.Second, "whoami", map[string]any{})
				cs.Close()
			}
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			others = append(others, r)
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
	})

	probes := &readiness{}
	probeCtx, stopProbes := context.WithCancel(dbtest.Operator())
	defer stopProbes()
	var probing sync.WaitGroup
	probing.Go(func() { probes.run(probeCtx, a) })

	time.Sleep(time.Second)

	// The fault. If the test dies while Postgres is down, bring it back so
	// that the rest of CI can clean up.
	t.Cleanup(func() { cluster.ensureStarted(t) })
	stopAt := time.Now()
	cluster.ctl(t, "stop", "-m", "immediate")
	stoppedAt := time.Now()
	t.Logf("Postgres stopped (immediate) in %s", stoppedAt.Sub(stopAt).Round(time.Millisecond))
	time.Sleep(outage)
	startAt := time.Now()
	cluster.ctl(t, "start")
	startedAt := time.Now()
	t.Logf("Postgres started again in %s", startedAt.Sub(startAt).Round(time.Millisecond))

	// The same processes must recover by themselves.
	var readyAt time.Time
	for deadline := time.Now().Add(20 * time.Second); readyAt.IsZero(); {
		if time.Now().After(deadline) {
			t.Fatal("GET /ready on A did not answer 200 within 20 s of Postgres starting again")
		}
		if code, _, err := a.ready(dbtest.Operator()); err == nil && code == 200 {
			readyAt = time.Now()
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("A ready again %s after Postgres started", readyAt.Sub(startedAt).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // calls after recovery must all succeed
	stopLoad()
	loadDone := make(chan struct{})
	go func() { wg.Wait(); close(loadDone) }()
	select {
	case <-loadDone:
	case <-time.After(20 * time.Second):
		t.Fatal("the agents' calls did not end within 20 s of stopping the load: a call hangs")
	}
	stopProbes()
	probing.Wait()

	for _, s := range []*server{a, b} {
		select {
		case <-s.Done():
			t.Fatalf("server %s exited during the outage: %v", s.name, s.Err())
		default:
		}
	}

	// Readiness: 503 while Postgres was down, 200 before and after.
	down, up := 0, 0
	for _, p := range probes.all() {
		switch {
		case p.err != nil:
			t.Errorf("GET /ready failed at +%s: %v", p.start.Sub(stopAt).Round(time.Millisecond), p.err)
		case p.start.After(stoppedAt) && p.end.Before(startAt):
			down++
			if p.code != 503 || !strings.Contains(p.body, "unavailable") {
				t.Errorf("GET /ready while Postgres was down answered %d %s; want 503 unavailable", p.code, p.body)
			}
		case p.end.Before(stopAt) || p.start.After(readyAt):
			up++
			if p.code != 200 {
				t.Errorf("GET /ready while Postgres was up answered %d %s; want 200", p.code, p.body)
			}
		}
	}
	if down < 5 || up < 5 {
		t.Errorf("only %d readiness probes met the outage and %d the healthy database; want at least 5 each", down, up)
	}

	// Tool calls: only clean, retryable tool errors, and only around the outage.
	all := append(others, l.outcomes...)
	sort.Slice(all, func(i, j int) bool { return all[i].start.Before(all[j].start) })
	var failed, cut, afterReady int
	for _, r := range all {
		if !r.ok() && r.start.Before(stoppedAt) {
			cut++
		}
		if r.ok() {
			if r.start.After(readyAt) {
				afterReady++
			}
			continue
		}
		at := fmt.Sprintf("started +%s", r.start.Sub(stopAt).Round(time.Millisecond))
		if r.err != nil {
			t.Errorf("%s: %v: want a tool result, not a transport error", at, r)
			continue
		}
		failed++
		text := r.text()
		if !strings.HasPrefix(text, "unavailable: ") || !strings.Contains(text, "retry") || strings.Contains(text, "internal") {
			t.Errorf("%s: %v: want \"unavailable: ... retry ...\"", at, r)
		}
		if r.end.Before(stopAt) || r.start.After(readyAt) {
			t.Errorf("%s: %v: failed while Postgres was up", at, r)
		}
	}
	if failed == 0 {
		t.Error("no call failed during the outage; the test proves nothing")
	}
	if afterReady == 0 {
		t.Error("no call succeeded after recovery")
	}
	if e := status.serverErrors(); len(e) > 0 {
		t.Errorf("/mcp answered with HTTP server errors %v; want a tool error in an HTTP 200 instead", e)
	}
	t.Logf("%d calls in all: %d ended with a retryable \"unavailable\" tool error during the outage (%d of them started before the stop command returned), %d succeeded after recovery; %d readiness probes saw 503, %d saw 200",
		len(all), failed, cut, afterReady, down, up)

	// LISTEN: each replica's listener is back, and wake-ups cross replicas.
	for _, app := range []string{"ctalk-faults-a", "ctalk-faults-b"} {
		waitForListener(t, d, app, stoppedAt, startAt)
	}
	wakeAfter := wakeRounds(t, a, b, o, sleeperToken, 3)
	t.Logf("after recovery, asks through B woke waiters on A in %v", wakeAfter)

	checkNothingLost(t, d, a, o, l)
}

// cluster is the local Postgres cluster behind TEST_DATABASE_URL.
type cluster struct {
	version, name string
}

// postgresCluster finds the cluster to restart: CTALK_FAULTS_PG_CLUSTER
// ("15 main"), or "main" of the newest version in /etc/postgresql. It
// refuses to go on unless that cluster is the one TEST_DATABASE_URL reaches.
func postgresCluster(t *testing.T) cluster {
	t.Helper()
	var c cluster
	if v := os.Getenv("CTALK_FAULTS_PG_CLUSTER"); v != "" {
		f := strings.Fields(v)
		if len(f) != 2 {
			t.Fatalf("CTALK_FAULTS_PG_CLUSTER=%q: want \"VERSION NAME\", such as \"15 main\"", v)
		}
		c = cluster{f[0], f[1]}
	} else {
		entries, err := os.ReadDir("/etc/postgresql")
		if err != nil || len(entries) == 0 {
			t.Fatalf("no local Postgres cluster to restart (/etc/postgresql): %v; set CTALK_FAULTS_PG_CLUSTER", err)
		}
		versions := []string{}
		for _, e := range entries {
			versions = append(versions, e.Name())
		}
		sort.Slice(versions, func(i, j int) bool { return versionLess(versions[i], versions[j]) })
		c = cluster{versions[len(versions)-1], "main"}
	}
	out, err := exec.Command("pg_lsclusters", "-h").Output()
	if err != nil {
		t.Fatalf("pg_lsclusters: %v", err)
	}
	var dataDir string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[0] == c.version && f[1] == c.name {
			dataDir = f[5]
		}
	}
	if dataDir == "" {
		t.Fatalf("cluster %s %s is not in pg_lsclusters:\n%s", c.version, c.name, out)
	}
	conn, err := db.Connect(dbtest.Operator(), db.Config{URL: os.Getenv("TEST_DATABASE_URL")})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var served string
	if err := conn.QueryRow(dbtest.Operator(), `SHOW data_directory`).Scan(&served); err != nil {
		t.Fatalf("SHOW data_directory: %v", err)
	}
	if served != dataDir {
		t.Fatalf("TEST_DATABASE_URL is served from %s, but cluster %s %s lives in %s: refusing to restart a cluster the test does not use",
			served, c.version, c.name, dataDir)
	}
	return c
}

func versionLess(a, b string) bool {
	var x, y int
	fmt.Sscan(a, &x)
	fmt.Sscan(b, &y)
	return x < y
}

func (c cluster) ctl(t *testing.T, action string, opts ...string) {
	t.Helper()
	args := append([]string{"--skip-systemctl-redirect", c.version, c.name, action}, opts...)
	out, err := exec.Command("pg_ctlcluster", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("pg_ctlcluster %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// ensureStarted starts the cluster if it is down.
func (c cluster) ensureStarted(t *testing.T) {
	if exec.Command("pg_ctlcluster", "--skip-systemctl-redirect", c.version, c.name, "status").Run() == nil {
		return
	}
	t.Logf("starting Postgres %s %s again", c.version, c.name)
	out, err := exec.Command("pg_ctlcluster", "--skip-systemctl-redirect", c.version, c.name, "start").CombinedOutput()
	if err != nil {
		t.Errorf("could not start Postgres %s %s again: %v\n%s", c.version, c.name, err, out)
	}
}

// waitForListener waits until the server named app has a connection in
// LISTEN again, opened after the crash at stopped. start is when Postgres
// was told to start. A server listens to all its channels on one
// connection, whose last statement is the LISTEN of one of them; that the
// wake-ups' channel is among them the wake rounds after it show.
func waitForListener(t *testing.T, d database, app string, stopped, start time.Time) {
	t.Helper()
	// As the URL's user, who sees every backend's query: a role that owns
	// nothing (dbtest.RLS) sees only its own.
	conn, err := sql.Open("pgx", d.cfg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var opened time.Time
		err := conn.QueryRow(`SELECT backend_start FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN %' AND backend_start > $2`,
			app, stopped).Scan(&opened)
		if err == nil {
			t.Logf("%s listens again, on a connection opened %s after Postgres was told to start", app, opened.Sub(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has no new LISTEN connection 20 s after the restart: %v", app, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wakeRounds has the sleeper wait on A while a0 asks it through B, n times,
// and returns how long each wait took to return the question. Each must be
// under wakeWithin: only a LISTEN notification is that fast.
func wakeRounds(t *testing.T, a, b *server, o *org, sleeperToken string, n int) []time.Duration {
	t.Helper()
	waiter := mustConnect(t, a.base, sleeperToken, eraStateless, nil)
	asker := mustConnect(t, b.base, o.tokens[0], eraSessions, nil)
	var out []time.Duration
	for round := range n {
		// Hand over anything already there, so that the wait starts empty.
		testkit.OK(t, waiter, "check_inbox", map[string]any{"limit": 50})
		res := make(chan outcome, 1)
		go func() {
			res <- call(dbtest.Operator(), waiter, 20*time.Second, "wait_for_inbox", map[string]any{"timeout_s": 15})
		}()
		// No load runs during these rounds, so the one agent waiting on A
		// is the sleeper: ask only once it has subscribed, or an ask that
		// landed first would pass without LISTEN.
		a.waitForWaiting(1, 10*time.Second)
		key := fmt.Sprintf("wake-%d-%d", time.Now().UnixNano(), round)
		asked := time.Now()
		testkit.OK(t, asker, "ask_person", map[string]any{"to_user_id": "sleeper", "question": "wake " + key, "idempotency_key": key})
		r := <-res
		took := r.end.Sub(asked)
		if !r.ok() {
			t.Fatalf("round %d: %v", round, r)
		}
		qs, _ := r.structured()["questions"].([]any)
		if len(qs) != 1 {
			t.Fatalf("round %d: the wait on A returned %d questions after %s: %v", round, len(qs), took, r)
		}
		if took > wakeWithin {
			t.Errorf("round %d: an ask through B woke the waiter on A after %s; want under %s (LISTEN is not working)", round, took.Round(time.Millisecond), wakeWithin)
		}
		out = append(out, took.Round(time.Millisecond))
	}
	return out
}

// readiness probes GET /ready every 100 ms.
type readiness struct {
	mu     sync.Mutex
	probes []probe
}

type probe struct {
	start, end time.Time
	code       int
	body       string
	err        error
}

func (r *readiness) run(ctx context.Context, s *server) {
	for ctx.Err() == nil {
		p := probe{start: time.Now()}
		p.code, p.body, p.err = s.ready(ctx)
		p.end = time.Now()
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		r.probes = append(r.probes, p)
		r.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
}

func (r *readiness) all() []probe {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]probe(nil), r.probes...)
}
