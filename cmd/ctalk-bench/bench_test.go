package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestMain lets the memory phase re-execute the test binary as its child
// server, as it re-executes ctalk-bench.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(serveChild())
	}
	os.Exit(m.Run())
}

// tiny returns the arguments of a quick run: a few users, 1 s phases, a
// small history and 50 waiting agents. Under the race detector, which CI
// uses and which slows every query about tenfold, phases are shorter so that
// the test stays under 30 s.
func tiny() []string {
	if raceDetector {
		return []string{"-users", "4", "-c", "4", "-d", "400ms", "-scale-rows", "2000", "-waiters", "20", "-wake-samples", "10",
			"-delivery-samples", "5", "-scale-samples", "3", "-fanout-members", "20", "-fanout-rounds", "2", "-q", "-json"}
	}
	return []string{"-users", "4", "-c", "4", "-d", "1s", "-scale-rows", "2000", "-waiters", "50", "-wake-samples", "25",
		"-delivery-samples", "10", "-scale-samples", "10", "-fanout-members", "20", "-fanout-rounds", "2", "-q", "-json"}
}

// TestSmoke runs the whole harness with tiny numbers on each engine and
// checks that the report has every section and sane figures. Postgres runs
// only when TEST_DATABASE_URL is set.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the load harness for about 20 s")
	}
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			args := append(engineArgs(t, engine), tiny()...)
			t.Parallel()
			res, text := runHarness(t, args)

			for _, section := range []string{"THROUGHPUT AND LATENCY", "RATIOS", "DELIVERY", "FAN-OUT", "SCALE", "MEMORY", "TARGETS"} {
				if !strings.Contains(text, "\n"+section) {
					t.Errorf("the report has no %s section:\n%s", section, text)
				}
			}
			for _, want := range []struct{ phase, op string }{
				{"health", "GET /health"}, {"health", opBareHealth}, {"whoami", opFloorTool}, {"whoami", opPing}, {"whoami", opPingToken},
				{"whoami", "whoami"}, {"inbox", wireOp("whoami")},
				{"ask", "SQL insert only"}, {"ask", "SQL ask transaction"}, {"ask", "inbox.Service.Ask"}, {"ask", "ask_person"},
				{"inbox", "SQL inbox select"}, {"inbox", "inbox.Service.Inbox"}, {"inbox", "check_inbox"},
				{"cycle", "ask_person"}, {"cycle", "check_inbox"}, {"cycle", "propose_response"}, {"cycle", "send_response"},
				{"cycle", "wait_for_reply"}, {"cycle", "whoami"}, {"cycle", "list_users"}, {"cycle", cycleOp},
			} {
				o := res.op(want.phase, want.op)
				switch {
				case o == nil:
					t.Errorf("%s/%s: not measured", want.phase, want.op)
				case o.Calls == 0 || o.PerSecond <= 0 || o.P50MS <= 0 || o.P99MS < o.P50MS:
					t.Errorf("%s/%s: %+v; want calls, throughput and ordered quantiles", want.phase, want.op, *o)
				case o.Errors > 0:
					t.Errorf("%s/%s: %d errors, first: %s", want.phase, want.op, o.Errors, o.FirstError)
				}
			}
			for _, want := range [][2]string{
				{"GET /health", opBareHealth}, {wireOp("whoami"), opFloorTool}, {wireOp("check_inbox"), wireOp("whoami")},
				{wireOp("ask_person"), "SQL insert only"}, {wireOp("check_inbox"), "SQL inbox select"},
			} {
				found := false
				for _, rt := range res.Ratios {
					if rt.Tool == want[0] && rt.Limit == want[1] {
						found = true
						if rt.Status == statusSkipped || rt.Value <= 0 {
							t.Errorf("ratio %s / %s not computed: %+v", want[0], want[1], rt)
						}
					}
				}
				if !found {
					t.Errorf("no ratio %s / %s", want[0], want[1])
				}
			}

			if len(res.Delivery) != 2 {
				t.Fatalf("delivery settings: %+v", res.Delivery)
			}
			if d := res.Delivery[0]; d.Samples == 0 || d.Errors > 0 || d.P99MS < d.P50MS || d.P50MS <= 0 {
				t.Errorf("delivery in one process: %+v", d)
			}
			if d := res.Delivery[1]; engine == db.SQLite && !d.Skipped {
				t.Errorf("two replicas on SQLite: %+v; want skipped", d)
			} else if engine == db.Postgres && (d.Skipped || d.Samples == 0 || d.Errors > 0 || d.P50MS <= 0) {
				t.Errorf("delivery across two replicas: %+v", d)
			}

			if len(res.FanOut) != 2 {
				t.Fatalf("fan-out settings: %+v", res.FanOut)
			}
			for i, f := range res.FanOut {
				switch {
				case i == 1 && engine == db.SQLite:
					if !f.Skipped {
						t.Errorf("fan-out across two replicas on SQLite: %+v; want skipped", f)
					}
				case f.Skipped || f.Members != 20 || f.Rounds < 1 || f.Rounds > 2 || f.Errors > 0 || f.LastP50MS <= 0 || f.EachP99MS > f.LastP99MS || f.EachP50MS > f.LastP50MS:
					t.Errorf("fan-out (%s): %+v; want 1 or 2 rounds (-d bounds them) of 20 members without errors, each waiter no later than the last", f.Setting, f)
				case engine == db.Postgres && localPostgres(os.Getenv("TEST_DATABASE_URL")) && f.DBCPUMS <= 0:
					t.Errorf("fan-out (%s): %+v; want the CPU time of the database's backends, which run on this machine", f.Setting, f)
				}
			}

			sc := res.Scale
			if sc == nil || sc.Skipped || len(sc.Ops) != 8 {
				t.Fatalf("scale: %+v", sc)
			}
			for _, op := range sc.Ops {
				if op.Small.Calls == 0 || op.Big.Calls == 0 || op.Ratio <= 0 || op.Small.Errors+op.Big.Errors > 0 {
					t.Errorf("scale %s: %+v", op.Op, op)
				}
			}

			m := res.Memory
			if m == nil || m.Skipped {
				t.Fatalf("memory: %+v", m)
			}
			if m.RSSBaselineMB <= 0 || m.RSSWaitingMB <= m.RSSBaselineMB {
				t.Errorf("RSS %.1f MB idle, %.1f MB with %d waiting; want it to grow", m.RSSBaselineMB, m.RSSWaitingMB, m.Waiters)
			}
			if m.GoroutinesWaiting < m.GoroutinesBaseline+m.Waiters || !m.BackToBaseline || m.ReturnedEarly > 0 {
				t.Errorf("goroutines %d idle, %d waiting, %d after, %d early returns (%s)", m.GoroutinesBaseline, m.GoroutinesWaiting, m.GoroutinesAfter, m.ReturnedEarly, m.FirstError)
			}
			if m.OpenFilesWaiting < m.OpenFilesIdle+m.Waiters {
				t.Errorf("open files %d idle, %d with %d waiting; want one more per waiting agent", m.OpenFilesIdle, m.OpenFilesWaiting, m.Waiters)
			}
			if wk := m.Wake; wk == nil || wk.Asked == 0 || wk.Samples != wk.Asked || wk.Errors > 0 || wk.P50MS <= 0 || wk.MaxMS < wk.P99MS || wk.P99MS < wk.P50MS {
				t.Errorf("wake-ups with every agent waiting: %+v", wk)
			}
			if len(res.Targets) != 14 {
				t.Errorf("%d targets in the report, want 14: %+v", len(res.Targets), res.Targets)
			}
			if t.Failed() {
				t.Logf("report:\n%s", text)
			}
		})
	}
}

// TestAskNotified runs the ask phase with -notify on each engine: ask_person
// is measured on both servers in turns, the ratio is judged against its
// target, and the notified server's worker really sent mail.
func TestAskNotified(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the load harness")
	}
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			args := append(engineArgs(t, engine), "-phases", "ask", "-notify", "-users", "4", "-c", "4", "-d", "500ms", "-q", "-json")
			t.Parallel()
			res, text := runHarness(t, args)
			for _, op := range []string{wireOp("ask_person"), opAskNotified} {
				if o := res.op("ask", op); o == nil || o.Calls == 0 || o.Errors > 0 {
					t.Errorf("ask/%s: %+v; want calls without errors", op, o)
				}
			}
			var target *Target
			for i := range res.Targets {
				if strings.HasPrefix(res.Targets[i].Name, "ask_person with notifications on") {
					target = &res.Targets[i]
				}
			}
			if target == nil || target.Status == statusSkipped || target.Got == "" {
				t.Errorf("the notified ask's target: %+v; want it judged", target)
			}
			if m := res.NotifiedMail; m == nil || m.Questions == 0 || m.InTurns+m.After == 0 {
				t.Errorf("notified mail: %+v; want questions stored and mail sent for them", m)
			}
			if t.Failed() {
				t.Logf("report:\n%s", text)
			}
		})
	}
}

// engineArgs are the arguments that run the harness's server on engine; it
// skips Postgres when TEST_DATABASE_URL is not set.
func engineArgs(t *testing.T, engine db.Engine) []string {
	t.Helper()
	args := []string{"-engine", string(engine)}
	if engine == db.Postgres {
		url := os.Getenv("TEST_DATABASE_URL")
		if url == "" {
			t.Skip("skipping Postgres: TEST_DATABASE_URL is not set")
		}
		args = append(args, "-database-url", url)
	}
	return args
}

// TestTargetingARunningServer measures a server the test started, the way
// -url measures a deployed one: without database access or metrics token the
// database baselines, scale and memory are skipped with a reason.
func TestTargetingARunningServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the load harness")
	}
	t.Parallel()
	ctx := context.Background()
	s, err := startServer(ctx, serverConfig{DB: db.Config{Path: t.TempDir() + "/ctalk.db"}, BcryptCost: benchBcryptCost,
		AsksPerMin: 30, LoopMax: 20, Log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, text := runHarness(t, []string{"-url", s.URL, "-phases", "health,whoami,ask,scale,memory", "-users", "4", "-c", "2", "-d", "300ms", "-q", "-json"})
	if o := res.op("whoami", "whoami"); o == nil || o.Calls == 0 {
		t.Errorf("whoami against -url: %+v", o)
	}
	if o := res.op("ask", "SQL insert only"); o != nil {
		t.Errorf("the raw insert ran without -database-url: %+v", o)
	}
	for _, want := range []string{"seeding needs the target's database", "pass -metrics-token", "No -database-url"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report does not say %q:\n%s", want, text)
		}
	}
}

func TestFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-url", "http://ctalk.example.com"}, "not a loopback"},
		{[]string{"-engine", "postgres"}, "needs -database-url"},
		{[]string{"-engine", "mysql"}, "is not sqlite or postgres"},
		{[]string{"-era", "2024-11-05"}, "-era"},
		{[]string{"-users", "2"}, "-users"},
		{[]string{"-scale-rows", "10"}, "-scale-rows"},
		{[]string{"-phases", "health,nap"}, "unknown phase"},
		{[]string{"-fanout-members", "0"}, "-fanout-members"},
		{[]string{"-fanout-cpuprofile", "f", "-cpuprofile", "c"}, "cannot run together"},
		{[]string{"-waiters", "10", "-wake-samples", "11"}, "-wake-samples"},
		{[]string{"-url", "http://127.0.0.1:8080", "-notify"}, "-notify"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, err := parseFlags(c.args, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("parseFlags(%q) = %v; want an error containing %q", c.args, err, c.want)
			}
		})
	}
	cfg, err := parseFlags([]string{"-url", "http://127.0.0.1:8080", "-phases", "health,memory"}, &bytes.Buffer{})
	if err != nil || !cfg.Phases["health"] || !cfg.Phases["memory"] || cfg.Phases["scale"] {
		t.Fatalf("parseFlags: %+v, %v", cfg, err)
	}
}

// runHarness runs the command with args (which include -json) and returns
// the decoded report and its text rendering.
func runHarness(t *testing.T, args []string) (*Result, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("ctalk-bench %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var res Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("the -json report does not decode: %v\n%s", err, stdout.String())
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	return &res, text.String()
}

func discardLogger() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

// localPostgres reports whether url names a Postgres whose processes this
// machine shows (not one in a container behind a forwarded port), so that
// the fan-out phase can read its backends' CPU time.
func localPostgres(url string) bool {
	u, err := neturl.Parse(url)
	if err != nil {
		return false
	}
	switch u.Hostname() {
	case "127.0.0.1", "localhost", "::1", "":
	default:
		return false
	}
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, c := range comms {
		if b, err := os.ReadFile(c); err == nil && strings.TrimSpace(string(b)) == "postgres" {
			return true
		}
	}
	return false
}
