// Command ctalk serves the ctalk MCP server. "ctalk" alone serves; see usage
// for the other subcommands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/db"
)

const usage = `ctalk: people and their AI agents ask each other questions, over MCP.

Usage:
  ctalk                      serve (same as "ctalk serve")
  ctalk serve                serve HTTP and MCP at /mcp on $HOST:$PORT
  ctalk migrate up           apply pending database migrations
  ctalk migrate down N       revert the last N migrations
  ctalk migrate version      print the applied schema version
  ctalk stdio --url URL      local stdio MCP server forwarding to a hosted ctalk (see --help)
  ctalk version              print version, commit and build time

Configuration comes from the environment; see README.md.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "ctalk:", err)
		os.Exit(1)
	}
}

// run is the whole program; tests call it with their own environment and
// receive the listening address through onListen.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, onListen func(addr string)) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "version", "--version", "-v":
		v, c, t := buildInfo()
		fmt.Fprintf(stdout, "ctalk %s (commit %s, built %s)\n", v, c, t)
		return nil
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return nil
	case "stdio":
		return stdio(ctx, args, getenv, os.Stdin, stdout, stderr)
	case "serve", "migrate":
	default:
		return fmt.Errorf("unknown command %q\n\n%s", cmd, usage)
	}

	cfg, err := LoadConfig(getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if cmd == "migrate" {
		return migrate(ctx, cfg, log, args, stdout)
	}
	return serve(ctx, cfg, log, onListen)
}

func dbConfig(cfg Config, log *slog.Logger) db.Config {
	return db.Config{URL: cfg.DatabaseURL, DirectURL: cfg.DatabaseURLUnpooled, Path: cfg.DBPath, Logger: log}
}

func migrate(ctx context.Context, cfg Config, log *slog.Logger, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("migrate needs one of: up, down N, version")
	}
	d, err := db.Connect(ctx, dbConfig(cfg, log))
	if err != nil {
		return err
	}
	defer d.Close()
	switch args[0] {
	case "up":
		if err := d.MigrateUp(); err != nil {
			return err
		}
	case "down":
		if len(args) != 2 {
			return errors.New("migrate down needs the number of migrations to revert, e.g. \"ctalk migrate down 1\"")
		}
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 1 {
			return fmt.Errorf("migrate down: %q is not a positive number", args[1])
		}
		if err := d.MigrateDown(n); err != nil {
			return err
		}
	case "version":
	default:
		return fmt.Errorf("unknown migrate command %q: use up, down N or version", args[0])
	}
	v, dirty, err := d.MigrationVersion()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "schema version %d (%s)", v, d.Engine)
	if dirty {
		fmt.Fprint(stdout, ", dirty: a migration failed part-way; fix the schema by hand, then rerun")
	}
	fmt.Fprintln(stdout)
	return nil
}

// wiring is what api.Assemble needs from the configuration.
func wiring(cfg Config, log *slog.Logger) api.Wiring {
	v, c, t := buildInfo()
	return api.Wiring{
		API: api.Config{
			PublicURL:      cfg.PublicURL,
			AllowedOrigins: cfg.AllowedOrigins,
			Version:        v,
			Build:          fmt.Sprintf("commit %s, built %s", c, t),
			Logger:         log,
			AllowOrgSignup: cfg.AllowOrgSignup,
			SignupSecret:   cfg.SignupSecret,
			MetricsToken:   cfg.MetricsToken,
			ReadTimeout:    cfg.ReadTimeout,
			SessionIdleTTL: cfg.SessionIdleTTL,
			TrustedProxies: cfg.TrustedProxies,
			ClientIPHeader: cfg.ClientIPHeader,
		},
		Auth:           cfg.Auth,
		Inbox:          cfg.Inbox,
		AuditRetention: time.Duration(cfg.AuditRetentionDays) * 24 * time.Hour,
	}
}

// serve runs the HTTP server until ctx is cancelled, then drains in-flight
// requests and returns nil.
func serve(ctx context.Context, cfg Config, log *slog.Logger, onListen func(string)) error {
	v, c, t := buildInfo()
	if cfg.Auth.BcryptCost < 10 {
		log.Warn("BCRYPT_COST is below 10: passwords are cheap to brute-force; use this only for tests", "bcrypt_cost", cfg.Auth.BcryptCost)
	}
	dcfg := dbConfig(cfg, log)
	d, err := db.Open(ctx, dcfg)
	if err != nil {
		return err
	}
	defer d.Close()

	app, err := api.Assemble(d, wiring(cfg, log))
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		app.Close(ctx)
		return fmt.Errorf("listen on %s (HOST, PORT): %w", cfg.Addr(), err)
	}
	// The api bounds the read of a request's body itself, and answers 408
	// saying so, where ReadTimeout would drop the connection unanswered.
	srv := &http.Server{
		Handler:           app.Handler(),
		ReadHeaderTimeout: cfg.ReadTimeout,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	log.Info("ctalk listening",
		"addr", ln.Addr().String(), "version", v, "commit", c, "built", t,
		"database", string(d.Engine), "database_at", d.Describe(dcfg), "public_url", cfg.PublicURL,
		"trusted_proxy_networks", len(cfg.TrustedProxies), "client_ip_header", cfg.ClientIPHeader)
	if onListen != nil {
		onListen(ln.Addr().String())
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		app.Close(context.Background())
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining requests")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	app.Close(shutdownCtx)
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}
