// Command ctalk-bench measures ctalk side by side with the limits that bound
// it: the HTTP stack (GET /health on the same server) and the database (the
// SQL behind ask_person and check_inbox, run directly through database/sql).
// It also measures delivery latency to a waiting agent, how inbox reads
// scale with an org's history, and the memory of thousands of waiting agents,
// and prints each figure next to its target.
//
// It talks to loopback only, every phase is bounded in time and count, and
// it stops by itself. By default it starts ctalk in this process on
// 127.0.0.1:0, wired as cmd/ctalk wires it; with -url it measures a running
// server instead.
//
//	ctalk-bench                                   # SQLite in a temporary directory
//	ctalk-bench -engine postgres -database-url postgres://...
//	ctalk-bench -url http://127.0.0.1:8080 -database-url postgres://... -metrics-token ...
//	ctalk-bench -phases whoami -cpuprofile cpu.out   # then: go tool pprof -tagfocus side=server cpu.out
//	ctalk-bench -phases memory -memprofile heap.out
//	ctalk-bench -phases ask -notify                  # ask_person with notifications on against off
//
// Machines shared with other work make absolute figures noise: compare the
// ratios of one run. The exit status is 0 when the measurement ran, whether
// or not the targets were met: misses are marked in the report.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ctalk/ctalk/internal/mcpclient"
)

func main() {
	if os.Getenv(childEnv) == "1" {
		os.Exit(serveChild())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "ctalk-bench:", err)
		os.Exit(1)
	}
}

// allPhases are the phases in the order they run. Each tool phase runs right
// after the limit it is compared with, so that both see the same machine.
var allPhases = []string{"health", "whoami", "ask", "inbox", "cycle", "delivery", "fanout", "scale", "memory"}

// Config is what one run measures, from the command line.
type Config struct {
	Engine       string
	DatabaseURL  string
	URL          string
	MetricsToken string
	SignupSecret string
	ServerBin    string
	Era          string
	Users        int
	Concurrency  int
	Duration     time.Duration
	MaxRequests  int
	// DeliverySamples and ScaleSamples bound the sequential measurements;
	// Duration bounds them in time too.
	DeliverySamples int
	ScaleSamples    int
	ScaleSmall      int
	ScaleRows       int
	Waiters         int
	// FanOutMembers wait in the fanout phase's channel; FanOutRounds bounds
	// its rounds, as Duration does.
	FanOutMembers int
	FanOutRounds  int
	// FanOutProfile, when set, names the CPU profiles of the fan-out
	// rounds: from each post to the last return, one file per round.
	FanOutProfile string
	WakeSamples   int
	Phases        map[string]bool
	CPUProfile    string
	MemProfile    string
	JSON          bool
	Quiet         bool
	Keep          bool
	// Notify adds to the ask phase ask_person on a second server with
	// notifications on, in turns with the first (see notified.go).
	Notify bool
}

func parseFlags(args []string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("ctalk-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Engine, "engine", "sqlite", "database of the in-process server: sqlite (temp dir) or postgres (needs -database-url)")
	fs.StringVar(&c.DatabaseURL, "database-url", "", "Postgres URL: the database of the in-process server (a throwaway schema is created in it and dropped), or, with -url, the target's database for the database baselines and the scale seeding")
	fs.StringVar(&c.URL, "url", "", "measure a running ctalk at this loopback base URL (e.g. http://127.0.0.1:8080) instead of starting one")
	fs.StringVar(&c.MetricsToken, "metrics-token", "", "with -url: the target's METRICS_TOKEN, to read its memory and goroutines from /metrics")
	fs.StringVar(&c.SignupSecret, "signup-secret", "", "with -url: the target's SIGNUP_SECRET, when its organization sign-up is closed")
	fs.StringVar(&c.ServerBin, "server-bin", "", "memory phase: a ctalk binary to run as the measured child process (go build -o ctalk ./cmd/ctalk); default: this binary re-executed as a server wired like cmd/ctalk")
	fs.StringVar(&c.Era, "era", mcpclient.EraSessions, "MCP protocol era of the clients: "+mcpclient.EraSessions+" (sessions) or "+mcpclient.EraStateless+" (stateless)")
	fs.IntVar(&c.Users, "users", 20, "users per organization (at least 4)")
	fs.IntVar(&c.Concurrency, "c", 16, "concurrent clients in each throughput phase")
	fs.DurationVar(&c.Duration, "d", 10*time.Second, "duration of each phase")
	fs.IntVar(&c.MaxRequests, "max-requests", 2000000, "hard cap on the requests and statements of all throughput phases together, shared equally between them")
	fs.IntVar(&c.DeliverySamples, "delivery-samples", 200, "delivery latency samples per setting (sequential; also bounded by -d)")
	fs.IntVar(&c.ScaleSamples, "scale-samples", 200, "sequential calls per operation and history size in the scale phase (also bounded by -d)")
	fs.IntVar(&c.ScaleSmall, "scale-small", 1000, "stored questions in the org's history for the small side of the scale phase")
	fs.IntVar(&c.ScaleRows, "scale-rows", 1000000, "stored questions in the org's history for the big side of the scale phase")
	fs.IntVar(&c.Waiters, "waiters", fullWaiters, "concurrent waiting agents in the memory phase (each holds a connection: needs about this many open files, see deploy/README.md)")
	fs.IntVar(&c.FanOutMembers, "fanout-members", 500, "fanout phase: members of the channel, each waiting in wait_for_message (each holds a connection)")
	fs.IntVar(&c.FanOutRounds, "fanout-rounds", 100, "fanout phase: posts per setting, after one that is not counted (also bounded by -d)")
	fs.StringVar(&c.FanOutProfile, "fanout-cpuprofile", "", "fanout phase: write a CPU profile of each counted round alone, from the post to the last return, to this path + \".<setting>.<round>\" (then: go tool pprof -top ctalk-bench path.*); not with -cpuprofile")
	fs.IntVar(&c.WakeSamples, "wake-samples", 1000, "memory phase: with every agent waiting, ask this many of them a question each (at most -waiters; 4 askers, 200 asks/s, also bounded by -d) and time each wake-up; 0: none")
	phases := fs.String("phases", "all", "comma-separated phases to run: "+strings.Join(allPhases, ","))
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile of this process to the file; server goroutines carry the label side=server (go tool pprof -tagfocus side=server) and addr=<the server's address>, which tells apart the servers of one phase (go tool pprof -tags); the memory phase's child server writes its CPU profile while its agents are woken to the file + \".wake\" (not with -server-bin or -url)")
	fs.StringVar(&c.MemProfile, "memprofile", "", "memory phase: write the child server's heap profile, with every agent waiting, to the file, and its goroutine profile to the file + \".goroutine\" (not with -server-bin or -url)")
	fs.BoolVar(&c.JSON, "json", false, "print the report as JSON instead of a table")
	fs.BoolVar(&c.Quiet, "q", false, "no progress lines on stderr")
	fs.BoolVar(&c.Notify, "notify", false, "ask phase: also measure ask_person on a second in-process server with notifications on (PUBLIC_URL set, every user with an email, the mail accepted and counted), in turns with the server without, and judge the ratio (not with -url)")
	fs.BoolVar(&c.Keep, "keep", false, "keep the temporary directory (server logs, SQLite files) and the Postgres scratch schema, and print where they are")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q; see -h", fs.Args())
	}
	c.Phases = map[string]bool{}
	for _, p := range strings.Split(*phases, ",") {
		p = strings.TrimSpace(p)
		if p == "all" {
			for _, a := range allPhases {
				c.Phases[a] = true
			}
			continue
		}
		if !slices.Contains(allPhases, p) {
			return c, fmt.Errorf("-phases: unknown phase %q; choose from %s", p, strings.Join(allPhases, ","))
		}
		c.Phases[p] = true
	}
	return c, c.validate()
}

func (c Config) validate() error {
	var errs []string
	if c.URL == "" {
		switch c.Engine {
		case "sqlite":
		case "postgres":
			if c.DatabaseURL == "" {
				errs = append(errs, "-engine postgres needs -database-url")
			}
		default:
			errs = append(errs, fmt.Sprintf("-engine %q is not sqlite or postgres", c.Engine))
		}
	} else if !loopback(c.URL) {
		errs = append(errs, fmt.Sprintf("-url %q is not a loopback http URL (http://127.0.0.1:PORT or http://localhost:PORT): this harness only loads loopback servers", c.URL))
	}
	if c.Notify && c.URL != "" {
		errs = append(errs, "-notify starts a server of its own with notifications on: it cannot measure a running server (-url)")
	}
	if c.Era != mcpclient.EraSessions && c.Era != mcpclient.EraStateless {
		errs = append(errs, fmt.Sprintf("-era %q is not %s or %s", c.Era, mcpclient.EraSessions, mcpclient.EraStateless))
	}
	if c.Users < 4 || c.Users > 1000 {
		errs = append(errs, "-users must be from 4 to 1000")
	}
	if c.Concurrency < 1 || c.Concurrency > 1024 {
		errs = append(errs, "-c must be from 1 to 1024")
	}
	if c.Duration < 100*time.Millisecond || c.Duration > 10*time.Minute {
		errs = append(errs, "-d must be from 100ms to 10m")
	}
	if c.MaxRequests < 100 {
		errs = append(errs, "-max-requests must be at least 100")
	}
	if c.DeliverySamples < 1 || c.ScaleSamples < 1 {
		errs = append(errs, "-delivery-samples and -scale-samples must be at least 1")
	}
	if c.ScaleSmall < 1 || c.ScaleRows < c.ScaleSmall || c.ScaleRows > 50000000 {
		errs = append(errs, "-scale-rows must be from -scale-small to 50,000,000")
	}
	if c.Waiters < 1 || c.Waiters > 10000 {
		errs = append(errs, "-waiters must be from 1 to 10,000")
	}
	if c.FanOutProfile != "" && c.CPUProfile != "" {
		errs = append(errs, "-fanout-cpuprofile and -cpuprofile cannot run together: Go writes one CPU profile at a time")
	}
	if c.FanOutMembers < 1 || c.FanOutMembers > 5000 || c.FanOutRounds < 1 {
		errs = append(errs, "-fanout-members must be from 1 to 5,000 and -fanout-rounds at least 1")
	}
	if c.WakeSamples < 0 || c.WakeSamples > c.Waiters {
		errs = append(errs, "-wake-samples must be from 0 to -waiters")
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// run measures what the arguments ask for and prints the report.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	progress := io.Discard
	if !cfg.Quiet {
		progress = stderr
	}
	res, err := Measure(ctx, cfg, progress)
	if err != nil {
		return err
	}
	if cfg.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return res.WriteText(stdout)
}
