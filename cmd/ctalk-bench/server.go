package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/mcpclient"
	"github.com/ctalk/ctalk/mail"
	"github.com/ctalk/ctalk/wait"
)

// Settings of every server the harness starts. A low bcrypt cost keeps the
// set-up of hundreds of logins short; it touches no measured call. The ask
// limits are raised so that the ask phases measure throughput rather than
// the limiter; the loop breaker stays on (its COUNT is part of every ask).
const (
	benchBcryptCost   = 4
	benchAsksPerMin   = 100000
	benchLoopMax      = 100000
	benchMetricsToken = "ctalk-bench-metrics-token-0123456789"
	// benchLoginRate lifts the per-address login limit: every agent of the
	// harness logs in from 127.0.0.1.
	benchLoginRate = 1e6
	auditRetention = 90 * 24 * time.Hour
)

// serverConfig says how to wire one ctalk server.
type serverConfig struct {
	DB           db.Config
	MetricsToken string
	BcryptCost   int
	AsksPerMin   int
	LoopMax      int
	// LoginRate, when set, replaces the per-address login rate and burst.
	LoginRate float64
	Log       *slog.Logger
	// Label marks the server's goroutines in CPU profiles.
	Label bool
	// PublicURL, when set, turns notifications on (see app/notify.go), and
	// Sender then takes the email they send.
	PublicURL string
	Sender    mail.Sender
}

// server is a ctalk server running in this process.
type server struct {
	URL    string
	DB     *db.DB
	Broker *wait.Broker
	Inbox  *inbox.Service
	app    *app.Assembly
	srv    *http.Server
}

// startServer wires a server with app.Assemble, as cmd/ctalk does, with the
// settings above, and serves it on 127.0.0.1:0.
func startServer(ctx context.Context, sc serverConfig) (*server, error) {
	d, err := db.Open(ctx, sc.DB)
	if err != nil {
		return nil, err
	}
	acfg := auth.DefaultConfig()
	acfg.BcryptCost = sc.BcryptCost
	if sc.LoginRate > 0 {
		acfg.IPRate, acfg.IPBurst = sc.LoginRate, int(sc.LoginRate)
		// Every password check counts as a failure until it succeeds, so
		// the concurrent set-up of an org would otherwise hold its admin
		// account back.
		acfg.MaxFailures, acfg.AccountMaxFailures = int(sc.LoginRate), int(sc.LoginRate)
	}
	icfg := inbox.DefaultConfig()
	icfg.AsksPerMinute, icfg.LoopMax = sc.AsksPerMin, sc.LoopMax
	assembly, err := app.Assemble(d, app.Wiring{
		API: api.Config{
			Version:        "bench",
			Logger:         sc.Log,
			AllowOrgSignup: true,
			MetricsToken:   sc.MetricsToken,
			PublicURL:      sc.PublicURL,
		},
		Sender:         sc.Sender,
		Auth:           acfg,
		Inbox:          icfg,
		AuditRetention: auditRetention,
	})
	if err != nil {
		d.Close()
		return nil, err
	}
	url, srv, err := serveHTTP(ctx, assembly.Handler(), sc.Label)
	if err != nil {
		assembly.Close(ctx)
		d.Close()
		return nil, err
	}
	return &server{URL: url, DB: d, Broker: assembly.Broker, Inbox: assembly.Inbox, app: assembly, srv: srv}, nil
}

// serveHTTP serves h on 127.0.0.1:0 with the settings of cmd/ctalk's HTTP
// server, and returns its base URL. Every server of a run, ctalk and the
// floors beside it, is served this way.
func serveHTTP(ctx context.Context, h http.Handler, label bool) (string, *http.Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen on 127.0.0.1:0: %w", err)
	}
	if label {
		h = labelled(h, ln.Addr().String())
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), srv, nil
}

// Close drains and stops the server as cmd/ctalk does on SIGTERM.
func (s *server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	s.app.Close(ctx)
	s.srv.Shutdown(ctx)
	s.DB.Close()
}

// labelled marks every request's goroutine side=server and addr=addr, so
// that a CPU profile of the harness can be narrowed to the server, or to
// one of a phase's servers (the ask phase's with and without
// notifications, say).
func labelled(h http.Handler, addr string) http.Handler {
	labels := pprof.Labels("side", "server", "addr", addr)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pprof.Do(r.Context(), labels, func(ctx context.Context) {
			h.ServeHTTP(w, r.WithContext(ctx))
		})
	})
}

// childEnv makes this binary serve instead of measuring: the memory phase
// runs the server in its own process so that its RSS is the server's alone.
const childEnv = "CTALK_BENCH_SERVER"

// serveChild is the child process: a server wired by startServer, configured
// from the same environment variables as cmd/ctalk, announced on stderr with
// the same "ctalk listening" log line, stopped by SIGTERM.
func serveChild() int {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Unset, a setting keeps its package's default, as in cmd/ctalk.
	num := func(name string, def int) int {
		if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
			return n
		}
		return def
	}
	// The memory phase's agents each hold a connection to this server.
	if err := raiseFileLimit(10000 + fileSlack); err != nil {
		log.Warn("open files", "error", err)
	}
	acfg, icfg := auth.DefaultConfig(), inbox.DefaultConfig()
	sc := serverConfig{
		DB:           db.Config{URL: os.Getenv("DATABASE_URL"), Path: os.Getenv("RELAY_DB_PATH")},
		MetricsToken: os.Getenv("METRICS_TOKEN"),
		BcryptCost:   num("BCRYPT_COST", acfg.BcryptCost),
		AsksPerMin:   num("ASKS_PER_MINUTE", icfg.AsksPerMinute),
		LoopMax:      num("LOOP_MAX_QUESTIONS", icfg.LoopMax),
		LoginRate:    float64(num(loginRateEnv, 0)),
		Log:          log,
	}
	s, err := startServer(ctx, sc)
	if err != nil {
		log.Error("start", "error", err)
		return 1
	}
	if path := os.Getenv(heapProfileEnv); path != "" {
		go profileOnSignal(ctx, path, log)
	}
	if path := os.Getenv(cpuProfileEnv); path != "" {
		go cpuProfileOnSignal(ctx, path, log)
	}
	log.Info("ctalk listening", "addr", strings.TrimPrefix(s.URL, "http://"))
	<-ctx.Done()
	s.Close()
	return 0
}

// heapProfileEnv names the file a child server writes its heap profile to
// when it receives SIGUSR1; its goroutine profile goes beside it.
const heapProfileEnv = "CTALK_BENCH_HEAPPROFILE"

func profileOnSignal(ctx context.Context, path string, log *slog.Logger) {
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	for {
		select {
		case <-ctx.Done():
			return
		case <-usr1:
		}
		runtime.GC()
		for _, p := range []struct{ name, path string }{{"goroutine", path + ".goroutine"}, {"heap", path}} {
			// The heap profile is written last: its appearance says both are done.
			tmp := p.path + ".tmp"
			f, err := os.Create(tmp)
			if err == nil {
				err = pprof.Lookup(p.name).WriteTo(f, 0)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err == nil {
				err = os.Rename(tmp, p.path)
			}
			if err != nil {
				log.Error("write profile", "profile", p.name, "error", err)
			}
		}
	}
}

// cpuProfileEnv names the file a child server writes a CPU profile to: it
// starts profiling at one SIGUSR2 and writes the profile at the next.
const cpuProfileEnv = "CTALK_BENCH_CPUPROFILE"

func cpuProfileOnSignal(ctx context.Context, path string, log *slog.Logger) {
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)
	defer signal.Stop(usr2)
	var f *os.File
	for {
		select {
		case <-ctx.Done():
			if f != nil {
				pprof.StopCPUProfile()
				f.Close()
			}
			return
		case <-usr2:
		}
		var err error
		if f == nil {
			if f, err = os.Create(path + ".tmp"); err == nil {
				if err = pprof.StartCPUProfile(f); err != nil {
					f.Close()
					f = nil
				}
			}
		} else {
			pprof.StopCPUProfile()
			err = f.Close()
			f = nil
			if err == nil {
				// The profile appears whole: its appearance says it is done.
				err = os.Rename(path+".tmp", path)
			}
		}
		if err != nil {
			log.Error("cpu profile", "error", err)
		}
	}
}

// toggleCPUProfile starts a child's CPU profile (started with cpuProfileEnv),
// or stops it and waits for the file.
func toggleCPUProfile(p *mcpclient.Process, path string, start bool) error {
	if start {
		os.Remove(path)
	}
	if err := p.Cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		return err
	}
	if start {
		return nil
	}
	return waitForFile(path, "CPU")
}

// loginRateEnv lifts the login limit of a child server of this binary;
// cmd/ctalk has no such setting, so with -server-bin logins are retried.
const loginRateEnv = "CTALK_BENCH_LOGIN_RATE"

// childServerEnv is the environment of a child server, understood by both
// cmd/ctalk and serveChild.
func childServerEnv(dbc db.Config) []string {
	env := []string{
		"PORT=0", "HOST=127.0.0.1",
		"BCRYPT_COST=" + strconv.Itoa(benchBcryptCost),
		"ASKS_PER_MINUTE=" + strconv.Itoa(benchAsksPerMin),
		"LOOP_MAX_QUESTIONS=" + strconv.Itoa(benchLoopMax),
		"METRICS_TOKEN=" + benchMetricsToken,
		loginRateEnv + "=" + strconv.Itoa(benchLoginRate),
		"LOG_LEVEL=info",
		"DATABASE_URL=" + dbc.URL,
		"RELAY_DB_PATH=" + dbc.Path,
	}
	for _, kv := range os.Environ() {
		// The child inherits the Go runtime settings and the path, nothing
		// that could configure ctalk differently.
		if strings.HasPrefix(kv, "GO") || strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	return env
}

// startChild runs bin (or this binary as serveChild when bin is empty) and
// waits for it to listen. Its log goes to logPath.
func startChild(ctx context.Context, bin string, env []string, logPath string) (*mcpclient.Process, error) {
	var cmd *exec.Cmd
	if bin == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find this binary to re-execute: %w", err)
		}
		cmd = exec.Command(self)
		env = append(env, childEnv+"=1")
	} else {
		cmd = exec.Command(bin, "serve")
	}
	cmd.Env = env
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	p, err := mcpclient.StartProcess(ctx, cmd, logFile)
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%w; its log is %s", err, logPath)
	}
	go func() { <-p.Done(); logFile.Close() }()
	return p, nil
}

// profile asks a child started with heapProfileEnv for its profiles and
// waits for them.
func writeProfiles(p *mcpclient.Process, path string) error {
	os.Remove(path)
	if err := p.Cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return err
	}
	return waitForFile(path, "heap")
}

// waitForFile waits for a child server to write the profile of kind at path.
func waitForFile(path, kind string) error {
	err := mcpclient.Poll(context.Background(), 30*time.Second, 50*time.Millisecond, func() (bool, error) {
		_, err := os.Stat(path)
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the server process wrote no %s profile to %s within 30 s", kind, path)
	}
	return nil
}

// rssBytes reads the resident set size of a process from /proc.
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				n, err := strconv.ParseInt(f[0], 10, 64)
				return n * 1024, err
			}
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// openFiles counts the open file descriptors of a process from /proc.
func openFiles(pid int) (int, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(fds), err
}

// scratchSchema creates an empty schema on the Postgres server of base and
// returns a URL whose search_path points at it, and a function that drops it.
func scratchSchema(ctx context.Context, base string) (string, func(), error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", nil, fmt.Errorf("-database-url is not a postgres:// URL")
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "ctalk_bench_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return "", nil, err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, fmt.Errorf("create a scratch schema: %w", err)
	}
	drop := func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer admin.Close()
		admin.Exec("DROP SCHEMA " + schema + " CASCADE")
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}

// loopback reports whether s is an http URL on a loopback address.
func loopback(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
