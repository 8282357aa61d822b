package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/mcpclient"
	"github.com/ctalk/ctalk/wait"

	"golang.org/x/sync/errgroup"
)

// Result is everything one run measured.
type Result struct {
	Setup    Setup      `json:"setup"`
	Ops      []OpStats  `json:"ops"`
	Ratios   []Ratio    `json:"ratios"`
	Delivery []Delivery `json:"delivery"`
	FanOut   []FanOut   `json:"fanout"`
	Scale    *Scale     `json:"scale,omitempty"`
	Memory   *Memory    `json:"memory,omitempty"`
	// NotifiedMail is set by the ask phase with -notify.
	NotifiedMail *NotifiedMail `json:"notified_mail,omitempty"`
	Targets      []Target      `json:"targets"`
	Notes        []string      `json:"notes"`
}

// Setup describes what was measured and how.
type Setup struct {
	Mode         string    `json:"mode"`
	URL          string    `json:"url"`
	Engine       string    `json:"engine"`
	Era          string    `json:"era"`
	Users        int       `json:"users"`
	Concurrency  int       `json:"concurrency"`
	PhaseSeconds float64   `json:"phase_seconds"`
	MaxRequests  int       `json:"max_requests"`
	PhaseCap     int64     `json:"requests_per_phase_cap"`
	BcryptCost   string    `json:"bcrypt_cost"`
	AskLimits    string    `json:"ask_limits"`
	GoVersion    string    `json:"go_version"`
	Platform     string    `json:"platform"`
	CPUs         int       `json:"cpus"`
	GOMAXPROCS   int       `json:"gomaxprocs"`
	Started      time.Time `json:"started"`
	ServerLog    string    `json:"server_log,omitempty"`
}

// runner holds the state of one run.
type runner struct {
	cfg     Config
	log     io.Writer
	res     *Result
	cl      *client
	url     string
	engine  db.Engine
	db      *db.DB
	broker  *wait.Broker
	inbox   *inbox.Service
	primary *server
	// second is a replica of primary on the same Postgres, started by the
	// first phase that needs one (see replica).
	second *server
	// dbcfg opens the in-process server's database: replicas and the child
	// server of the memory phase use it too.
	dbcfg    db.Config
	slog     *slog.Logger
	tmp      string
	prefix   string
	perPhase int64
	closers  []func()
	main     *org
	floors   floors
}

// Measure runs the phases cfg selects and returns what they measured. It
// writes progress lines to progress.
func Measure(ctx context.Context, cfg Config, progress io.Writer) (*Result, error) {
	r := &runner{cfg: cfg, log: progress, res: &Result{Setup: Setup{
		Era: cfg.Era, Users: cfg.Users, Concurrency: cfg.Concurrency, PhaseSeconds: cfg.Duration.Seconds(),
		MaxRequests: cfg.MaxRequests, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Started: time.Now().UTC().Truncate(time.Second),
	}}}
	defer r.close()
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	r.cl = newClient(cfg.Era, cfg.Concurrency, max(cfg.Waiters, cfg.FanOutMembers+1))
	r.closers = append(r.closers, r.cl.tr.CloseIdleConnections)
	fl, stopFloors, err := startFloors(ctx)
	if err != nil {
		return nil, err
	}
	r.floors = fl
	r.closers = append(r.closers, stopFloors)

	r.perPhase = int64(cfg.MaxRequests / max(r.throughputPhases(), 1))
	r.res.Setup.PhaseCap = r.perPhase

	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"health", r.phaseHealth},
		{"whoami", r.phaseWhoami},
		{"ask", r.phaseAsk},
		{"inbox", r.phaseInbox},
		{"cycle", r.phaseCycle},
		{"delivery", r.phaseDelivery},
		{"fanout", r.phaseFanOut},
		{"scale", r.phaseScale},
		{"memory", r.phaseMemory},
	}
	for _, s := range steps {
		if !cfg.Phases[s.name] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.logf("phase %s", s.name)
		if err := s.fn(ctx); err != nil {
			return nil, fmt.Errorf("phase %s: %w", s.name, err)
		}
	}
	r.evaluate()
	return r.res, nil
}

// throughputPhases counts the throughput runs that share -max-requests.
func (r *runner) throughputPhases() int {
	n := 0
	withDB := r.db != nil
	for _, p := range []struct {
		name       string
		plain, sql int
	}{{"health", 2, 0}, {"whoami", 5, 0}, {"ask", 2, 3}, {"inbox", 3, 2}, {"cycle", 1, 0}} {
		if r.cfg.Phases[p.name] {
			n += p.plain
			if p.name == "ask" && r.cfg.Notify {
				n++
			}
			if withDB {
				n += p.sql
			}
		}
	}
	return n
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.log, "ctalk-bench: "+format+"\n", args...)
}

func (r *runner) note(format string, args ...any) {
	r.res.Notes = append(r.res.Notes, fmt.Sprintf(format, args...))
}

func (r *runner) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// start starts the in-process server, or connects to the target and, when
// given, its database.
func (r *runner) start(ctx context.Context) error {
	tmp, err := os.MkdirTemp("", "ctalk-bench-")
	if err != nil {
		return err
	}
	r.tmp = tmp
	if r.cfg.Keep {
		r.note("Kept: the temporary directory %s (server logs, SQLite files).", tmp)
	} else {
		r.closers = append(r.closers, func() { os.RemoveAll(tmp) })
	}
	var b [3]byte
	rand.Read(b[:])
	r.prefix = "bench-" + hex.EncodeToString(b[:])

	if r.cfg.URL != "" {
		return r.startRemote(ctx)
	}
	logPath := filepath.Join(tmp, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	r.closers = append(r.closers, func() { logFile.Close() })
	// The server logs as cmd/ctalk does (JSON, info, every request and tool
	// call), to a file that is removed at the end.
	r.slog = slog.New(slog.NewJSONHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo}))

	if r.cfg.Engine == "postgres" {
		u, drop, err := scratchSchema(ctx, r.cfg.DatabaseURL)
		if err != nil {
			return err
		}
		if r.cfg.Keep {
			r.note("Kept: the Postgres scratch schema, at %s.", db.RedactURL(u))
		} else {
			r.closers = append(r.closers, drop)
		}
		r.dbcfg = db.Config{URL: u}
	} else {
		r.dbcfg = db.Config{Path: filepath.Join(tmp, "ctalk.db")}
	}
	r.logf("starting ctalk in this process on %s", r.cfg.Engine)
	s, err := r.startServer(ctx)
	if err != nil {
		return err
	}
	r.primary, r.url, r.db, r.engine, r.broker, r.inbox = s, s.URL, s.DB, s.DB.Engine, s.Broker, s.Inbox
	st := &r.res.Setup
	st.Mode, st.URL, st.Engine = "in-process server, wired as cmd/ctalk", s.URL, string(s.DB.Engine)
	st.BcryptCost = fmt.Sprintf("%d (harness setting, for fast set-up; production default 12; no measured call hashes a password); the per-address login limit is lifted, as every agent logs in from 127.0.0.1", benchBcryptCost)
	st.AskLimits = fmt.Sprintf("ASKS_PER_MINUTE=%d, LOOP_MAX_QUESTIONS=%d (raised so the ask phases measure throughput; both limit COUNTs still run on every ask)", benchAsksPerMin, benchLoopMax)
	if s.DB.Engine == db.Postgres {
		r.note("Postgres: a scratch schema was created on -database-url for this run (dropped at the end unless -keep).")
	} else {
		r.note("SQLite: a fresh file in a temporary directory (removed at the end unless -keep).")
	}
	return nil
}

func (r *runner) startServer(ctx context.Context) (*server, error) {
	s, err := startServer(ctx, serverConfig{DB: r.dbcfg, MetricsToken: benchMetricsToken, BcryptCost: benchBcryptCost,
		AsksPerMin: benchAsksPerMin, LoopMax: benchLoopMax, LoginRate: benchLoginRate, Log: r.slog, Label: true})
	if err != nil {
		return nil, fmt.Errorf("start the in-process server: %w", err)
	}
	r.closers = append(r.closers, s.Close)
	return s, nil
}

func (r *runner) startRemote(ctx context.Context) error {
	r.url = r.cfg.URL
	st := &r.res.Setup
	st.Mode, st.URL, st.Engine = "running server (-url)", r.url, "unknown (no -database-url)"
	st.BcryptCost = "the target's own"
	st.AskLimits = "the target's own (ASKS_PER_MINUTE defaults to 30 a minute per user: the ask phases may be refused as rate_limited; see the errors column)"
	if r.cfg.DatabaseURL == "" {
		r.note("No -database-url: the database baselines, ratios against them and the scale phase are skipped.")
		return nil
	}
	d, err := db.Connect(ctx, db.Config{URL: r.cfg.DatabaseURL})
	if err != nil {
		return err
	}
	r.closers = append(r.closers, func() { d.Close() })
	icfg := inbox.DefaultConfig()
	icfg.AsksPerMinute, icfg.LoopMax = benchAsksPerMin, benchLoopMax
	r.db, r.engine, r.inbox = d, db.Postgres, inbox.NewService(d, icfg, wait.NewBroker())
	st.Engine = "postgres"
	r.note("The organizations this run created stay in the target's database (ids start with %s).", r.prefix)
	return nil
}

// spec is a throughput phase with the run's concurrency, duration and cap.
func (r *runner) spec(phase, kind string) phaseSpec {
	label := "client"
	if kind == "sql" || kind == "service" {
		label = "baseline"
	}
	return phaseSpec{Phase: phase, Kind: kind, Concurrency: r.cfg.Concurrency, Duration: r.cfg.Duration, Budget: r.perPhase, Label: label}
}

func (r *runner) addOps(ops []OpStats) {
	for _, o := range ops {
		r.logf("  %-22s %-8s %8d calls %9.1f/s  p50 %7.2f ms  p99 %7.2f ms  errors %d", o.Op, o.Kind, o.Calls, o.PerSecond, o.P50MS, o.P99MS, o.Errors)
	}
	r.res.Ops = append(r.res.Ops, ops...)
}

// callCtx bounds one call; waits are shorter than this.
func callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 90*time.Second)
}

// Passwords of the orgs and users the harness creates.
const (
	adminPassword = "bench-admin-password"
	userPassword  = "bench-user-password"
	answerText    = "It retries three times with exponential backoff capped at 2 s, then gives up and surfaces the 503."
)

// org is an organization the harness created, with its users logged in.
type org struct {
	id       string
	users    []string
	tokens   []string
	sessions []*mcp.ClientSession
	// wire continues each session without the MCP client (see mcpclient.Wire).
	wire []*mcpclient.Wire
}

// newOrg registers an org with n users on base, logs each in and, when
// connect is set, opens one MCP session per user.
func (r *runner) newOrg(ctx context.Context, base, purpose string, n int, connect bool) (*org, error) {
	return r.newOrgOn(ctx, base, purpose, n, connect, false)
}

// newOrgOn is newOrg, with an email address for every user when withEmail
// is set (in benchEmailDomain, which no mail leaves the harness for).
func (r *runner) newOrgOn(ctx context.Context, base, purpose string, n int, connect, withEmail bool) (*org, error) {
	o := &org{id: r.prefix + "-" + purpose, users: make([]string, n), tokens: make([]string, n)}
	anon, err := r.cl.connect(ctx, base, "")
	if err != nil {
		return nil, err
	}
	defer anon.Close()
	args := map[string]any{"org_id": o.id, "name": "Bench " + purpose, "admin_password": adminPassword}
	if r.cfg.SignupSecret != "" {
		args["signup_secret"] = r.cfg.SignupSecret
	}
	if _, err := callTool(ctx, anon, "register_organization", args); err != nil {
		return nil, err
	}
	err = parallel(n, r.cfg.Concurrency, func(i int) error {
		o.users[i] = "u" + strconv.Itoa(i)
		role := "member"
		if i == 0 {
			role = "admin"
		}
		args := map[string]any{
			"org_id": o.id, "admin_password": adminPassword, "user_id": o.users[i], "name": "User " + strconv.Itoa(i),
			"password": userPassword, "ownership": []string{"area-" + strconv.Itoa(i)}, "role": role,
		}
		if withEmail {
			args["email"] = o.users[i] + "@" + benchEmailDomain
		}
		if _, err := callTool(ctx, anon, "register_user", args); err != nil {
			return err
		}
		m, err := login(ctx, anon, o.id, o.users[i])
		if err != nil {
			return err
		}
		o.tokens[i] = str(m, "auth_token")
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("create org %s: %w", o.id, err)
	}
	if connect {
		if o.sessions, err = r.connectAll(ctx, base, o.tokens); err != nil {
			return nil, err
		}
		for i, cs := range o.sessions {
			o.wire = append(o.wire, r.cl.wire(base, o.tokens[i], cs))
		}
	}
	return o, nil
}

// login logs a user in, waiting out the per-address login limit of a
// server the harness did not configure, for at most five minutes.
func login(ctx context.Context, cs *mcp.ClientSession, org, user string) (map[string]any, error) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		m, err := callTool(ctx, cs, "login", map[string]any{"org_id": org, "user_id": user, "password": userPassword})
		var te *mcpclient.ToolError
		if err == nil || !errors.As(err, &te) || !strings.Contains(te.Text, "rate limited") || time.Now().After(deadline) {
			return m, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// connectAll opens one session per token and closes them at the end of the run.
func (r *runner) connectAll(ctx context.Context, base string, tokens []string) ([]*mcp.ClientSession, error) {
	out := make([]*mcp.ClientSession, len(tokens))
	err := parallel(len(tokens), r.cfg.Concurrency, func(i int) error {
		cs, err := r.cl.connect(ctx, base, tokens[i])
		out[i] = cs
		return err
	})
	r.closers = append(r.closers, func() {
		for _, cs := range out {
			if cs != nil {
				cs.Close()
			}
		}
	})
	return out, err
}

// parallel runs fn(0..n-1) in at most workers goroutines and returns the
// first error.
func parallel(n, workers int, fn func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error { return fn(i) })
	}
	return g.Wait()
}

// inboxSenders is how many coworkers have each asked every user of the main
// org one pending question: check_inbox then reads a page of 10 questions
// from 10 senders, each with its sender's context.
const inboxSenders = 10

// mainOrg is the org of the whoami and inbox phases: every user has
// inboxSenders pending questions, each from a different coworker (fewer when
// the org is smaller).
func (r *runner) mainOrg(ctx context.Context) (*org, error) {
	if r.main != nil {
		return r.main, nil
	}
	o, err := r.newOrg(ctx, r.url, "main", r.cfg.Users, true)
	if err != nil {
		return nil, err
	}
	n := len(o.users)
	k := min(inboxSenders, n-1)
	err = parallel(n*k, r.cfg.Concurrency, func(i int) error {
		to, from := i/k, (i/k+1+i%k)%n
		_, err := callTool(ctx, o.sessions[from], "ask_person", map[string]any{"to_user_id": o.users[to], "question": questionText})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("seed the inboxes: %w", err)
	}
	r.main = o
	return o, nil
}

// call is one timed operation.
type call = func(ctx context.Context) error

// row is one operation of a throughput phase: prepare picks what to call,
// untimed, and the call it returns is timed.
type row struct {
	kind, op string
	prepare  func(rec *recorder) call
}

// throughput runs one operation as a throughput phase of its own.
func (r *runner) throughput(ctx context.Context, phase, kind, op string, prepare func(rec *recorder) call) {
	r.compare(ctx, phase, row{kind, op, prepare})
}

// compare runs rows that are compared with each other, in alternating turns
// (see runRows). Calls over HTTP are bounded by callCtx; statements and
// service calls are not.
func (r *runner) compare(ctx context.Context, phase string, rows ...row) {
	specs := make([]phaseSpec, len(rows))
	fns := make([]worker, len(rows))
	for i, rw := range rows {
		specs[i] = r.spec(phase, rw.kind)
		fns[i] = func(ctx context.Context, w int, rec *recorder) error {
			fn := rw.prepare(rec)
			return rec.do(rw.op, func() error {
				if rw.kind == "sql" || rw.kind == "service" {
					return fn(ctx)
				}
				c, cancel := callCtx(ctx)
				defer cancel()
				return fn(c)
			})
		}
	}
	if len(rows) == 1 {
		r.addOps(runPhase(ctx, specs[0], fns[0]))
		return
	}
	r.addOps(runRows(ctx, specs, fns))
}

// toolCall calls tool through the go-sdk session cs.
func toolCall(cs *mcp.ClientSession, tool string, args map[string]any) call {
	return func(ctx context.Context) error {
		_, err := callTool(ctx, cs, tool, args)
		return err
	}
}
