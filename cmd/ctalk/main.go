// Command ctalk serves the ctalk MCP server. "ctalk" alone serves; see usage
// for the other subcommands.
package main

import (
	"cmp"
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
	"strings"
	"syscall"
	"time"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/app"
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
  ctalk stdio --local        ctalk for the agents of this machine, no server (see --help)
  ctalk serve --local        the web app on this machine's local store (see --help)
  ctalk demo                 serve a demonstration organization on this machine
  ctalk passkeys waiting     list first passkeys waiting for confirmation
  ctalk passkeys confirm ID  confirm one as the server's operator (see --help)
  ctalk audit verify --org ID  check an organization's audit hash chain (see --help)
  ctalk version              print version, commit and build time

Every command answers --help. Configuration comes from the environment; see
docs/configuration.md.
`

// serveHelp is printed by "ctalk serve --help".
const serveHelp = `ctalk serve: serve HTTP and MCP at /mcp on $HOST:$PORT.

Usage:
  ctalk serve
  ctalk              (the same)

It takes no arguments: the environment configures it (PORT, HOST,
DATABASE_URL or RELAY_DB_PATH, PUBLIC_URL, ...; see docs/configuration.md). It first
checks every variable and that the address is free, then opens the database,
applies pending migrations, and serves until SIGTERM or SIGINT, when it ends
waiting calls and lets in-flight requests finish for up to 25 s.
`

// migrateHelp is printed by "ctalk migrate --help".
const migrateHelp = `ctalk migrate: change or show the database schema.

Usage:
  ctalk migrate up           apply every pending migration
  ctalk migrate down N       revert the last N applied migrations
  ctalk migrate version      print the applied schema version

Each command prints the schema version it leaves, such as "schema version 13
(sqlite)". A version is the number of the newest applied migration file
(0013_channel_post_approval.up.sql is version 13), not a count: numbers may
be skipped. Version 0 means no migration is applied. "ctalk serve" applies
pending migrations itself; migrate works on the database the environment
names (DATABASE_URL, else RELAY_DB_PATH).
`

// versionHelp is printed by "ctalk version --help".
const versionHelp = `ctalk version: print the version, the commit and the build time.

Usage:
  ctalk version

They come from the linker (-ldflags "-X main.version=... -X main.commit=...
-X main.buildTime=..."), as in a release's binaries and container image,
else from what Go records of the git checkout a binary is built in ("go
build ./cmd/ctalk" in a clone), else from the module version that "go
install github.com/ctalk/ctalk/cmd/ctalk@VERSION" records: a tag such as
v1.2.0, which names the commit, or a pseudo-version, which holds the
commit's prefix and time.
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
	if h, ok := helpOf(cmd, args); ok {
		fmt.Fprint(stdout, h)
		return nil
	}
	switch cmd {
	case "version", "--version", "-v":
		return printVersion(args, stdout)
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return nil
	case "stdio":
		return stdio(ctx, args, getenv, os.Stdin, stdout, stderr)
	}
	if err := checkArgs(cmd, args); err != nil {
		return err
	}
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	switch cmd {
	case "migrate":
		return migrate(ctx, cfg, log, args, stdout)
	case "passkeys":
		return passkeys(ctx, cfg, log, args, stdout)
	case "audit":
		org, _ := checkAuditArgs(args)
		return auditVerify(ctx, cfg, log, org, stdout)
	case "demo":
		return demoServe(ctx, cfg, log, getenv, stdout, onListen)
	}
	if isLocal(args) {
		return serveLocal(ctx, cfg, log, args, getenv, stdout, onListen)
	}
	return serve(ctx, cfg, log, onListen, serveHooks{})
}

// helpOf is the help cmd's args ask for, if they do.
func helpOf(cmd string, args []string) (string, bool) {
	if !wantsHelp(args) {
		return "", false
	}
	if cmd == "serve" && isLocal(args) {
		return serveLocalHelp, true
	}
	h, ok := commandHelp[cmd]
	return h, ok
}

// printVersion prints the build's version, commit and time.
func printVersion(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("version takes no arguments, not %q; see \"ctalk version --help\"", args[0])
	}
	b := buildInfo()
	fmt.Fprintf(stdout, "ctalk %s (%s)\n", b.Version, b)
	if b.Commit == "" && b.Tag == "" {
		fmt.Fprintln(stdout, unknownCommit)
	}
	return nil
}

// checkArgs refuses the arguments cmd does not take, before the
// configuration is read, and names an unknown command.
func checkArgs(cmd string, args []string) error {
	switch cmd {
	case "serve":
		if len(args) > 0 && !isLocal(args) {
			return fmt.Errorf("serve takes no arguments, not %q: the environment configures it; see \"ctalk serve --help\"", args[0])
		}
	case "migrate":
		return checkMigrateArgs(args)
	case "passkeys":
		return checkPasskeysArgs(args)
	case "audit":
		_, err := checkAuditArgs(args)
		return err
	case "demo":
		if len(args) > 0 {
			return fmt.Errorf("demo takes no arguments, not %q; see \"ctalk demo --help\"", args[0])
		}
	default:
		return fmt.Errorf("unknown command %q\n\n%s", cmd, usage)
	}
	return nil
}

// commandHelp is each command's --help; stdio answers its own.
var commandHelp = map[string]string{
	"serve": serveHelp, "migrate": migrateHelp, "version": versionHelp, "demo": demoHelp, "passkeys": passkeysHelp, "audit": auditHelp,
	"--version": versionHelp, "-v": versionHelp,
	"help": usage, "--help": usage, "-h": usage,
}

// wantsHelp reports whether any argument asks for help.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "--help", "-help", "help":
			return true
		}
	}
	return false
}

// checkMigrateArgs refuses a migrate command line before anything is opened.
func checkMigrateArgs(args []string) error {
	if len(args) == 0 {
		return errors.New("migrate needs one of: up, down N, version; see \"ctalk migrate --help\"")
	}
	want := map[string]int{"up": 1, "version": 1, "down": 2}[args[0]]
	switch {
	case want == 0:
		return fmt.Errorf("unknown migrate command %q: use up, down N or version; see \"ctalk migrate --help\"", args[0])
	case args[0] == "down" && len(args) == 1:
		return errors.New("migrate down needs the number of migrations to revert, e.g. \"ctalk migrate down 1\"")
	case len(args) > want:
		return fmt.Errorf("migrate %s: unexpected argument %q; see \"ctalk migrate --help\"", args[0], args[want])
	case args[0] == "down":
		if n, err := strconv.Atoi(args[1]); err != nil || n < 1 {
			return fmt.Errorf("migrate down: %q is not a positive number of migrations to revert", args[1])
		}
	}
	return nil
}

func dbConfig(cfg Config, log *slog.Logger) db.Config {
	return db.Config{URL: cfg.DatabaseURL, DirectURL: cfg.DatabaseURLUnpooled, Path: cfg.DBPath, PathSetting: "RELAY_DB_PATH", Logger: log, AllowOtherTables: cfg.AllowOtherTables, Shared: cfg.sharedStore, Role: cfg.DatabaseRole}
}

func migrate(ctx context.Context, cfg Config, log *slog.Logger, args []string, stdout io.Writer) error {
	d, err := db.Connect(ctx, dbConfig(cfg, log))
	if err != nil {
		return err
	}
	defer d.Close()
	var reverted []uint
	switch args[0] {
	case "up":
		err = d.MigrateUp()
	case "down":
		n, _ := strconv.Atoi(args[1])
		reverted, err = d.MigrateDown(n)
	}
	if err != nil {
		return err
	}
	v, dirty, err := d.MigrationVersion()
	if err != nil {
		return err
	}
	if args[0] == "down" {
		n, _ := strconv.Atoi(args[1])
		fmt.Fprintln(stdout, revertedLine(n, reverted, v))
	}
	fmt.Fprintf(stdout, "schema version %d (%s)", v, d.Engine)
	if dirty {
		fmt.Fprint(stdout, ", dirty: a migration failed part-way; fix the schema by hand, then rerun")
	}
	fmt.Fprintln(stdout)
	return nil
}

// revertedLine says what "migrate down n" reverted, leaving version left.
func revertedLine(n int, reverted []uint, left uint) string {
	vs := make([]string, len(reverted))
	for i, v := range reverted {
		vs[i] = strconv.FormatUint(uint64(v), 10)
	}
	var line string
	switch len(reverted) {
	case 0:
		return "nothing to revert: no migration is applied"
	case 1:
		line = "reverted migration " + vs[0]
	default:
		line = fmt.Sprintf("reverted %d migrations, versions %s", len(reverted), strings.Join(vs, ", "))
	}
	if len(reverted) < n {
		line += fmt.Sprintf(" (%d asked, %d applied)", n, len(reverted))
	}
	if left == 0 {
		line += "; none is applied now, and schema_migrations is dropped: the database holds nothing of ctalk's"
	}
	return line
}

// wiring is what app.Assemble needs from the configuration.
func wiring(cfg Config, log *slog.Logger) app.Wiring {
	b := buildInfo()
	return app.Wiring{
		API: api.Config{
			PublicURL:      cfg.PublicURL,
			AllowedOrigins: cfg.AllowedOrigins,
			Version:        b.Version,
			Build:          b.String(),
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
		Mail:           cfg.Mail,
		Notify:         cfg.Notify,
	}
}

// serveHooks let a command change what serve does around the server, as
// the demo seeds its organization; the zero value changes nothing.
type serveHooks struct {
	// opened runs once the database is open, before the app is assembled
	// on it.
	opened func(*db.DB)
	// ready runs once the app is assembled, with the base URL that people
	// open, before it serves.
	ready func(ctx context.Context, a *app.Assembly, base string) error
	// wire adjusts the app's wiring before it is assembled.
	wire func(*app.Wiring)
}

// serve runs the HTTP server until ctx is cancelled, then drains in-flight
// requests and returns nil.
func serve(ctx context.Context, cfg Config, log *slog.Logger, onListen func(string), h serveHooks) error {
	if cfg.Auth.BcryptCost < 10 {
		log.Warn("BCRYPT_COST is below 10: passwords are cheap to brute-force; use this only for tests", "bcrypt_cost", cfg.Auth.BcryptCost)
	}
	// The address is taken before the database is opened, so that a port in
	// use is reported without creating or migrating a database.
	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		return fmt.Errorf("listen on %s: %w; set PORT (or HOST) to a free address", cfg.Addr(), err)
	}
	defer ln.Close()
	dcfg := dbConfig(cfg, log)
	d, err := db.Open(ctx, dcfg)
	if err != nil {
		return err
	}
	defer d.Close()
	if h.opened != nil {
		h.opened(d)
	}
	assembly, err := assemble(ctx, cfg, log, d, ln.Addr(), h)
	if err != nil {
		return err
	}
	b := buildInfo()
	log.Info("ctalk listening",
		"addr", ln.Addr().String(), "version", b.Version, "commit", b.commit(), "built", b.time(),
		"database", string(d.Engine), "database_at", d.Describe(dcfg), "public_url", cfg.PublicURL,
		"trusted_proxy_networks", len(cfg.TrustedProxies), "client_ip_header", cfg.ClientIPHeader,
		"email", cfg.Mail.Enabled())
	if onListen != nil {
		onListen(ln.Addr().String())
	}
	return serveUntilDone(ctx, cfg, log, ln, assembly)
}

// assemble builds the app over d for the server listening at addr, and
// runs h's hooks around it.
func assemble(ctx context.Context, cfg Config, log *slog.Logger, d *db.DB, addr net.Addr, h serveHooks) (*app.Assembly, error) {
	w := wiring(cfg, log)
	if h.wire != nil {
		h.wire(&w)
	}
	local, onlyHere := cfg.LocalURL(addr)
	w.LocalURL = local
	if onlyHere {
		log.Warn("PUBLIC_URL is unset: links in mails and notifications point at this machine; set PUBLIC_URL when people on other machines use this server", "links", local)
	}
	assembly, err := app.Assemble(d, w)
	if err != nil {
		return nil, err
	}
	if h.ready != nil {
		base := cmp.Or(cfg.PublicURL, local, "http://"+addr.String())
		if err := h.ready(ctx, assembly, base); err != nil {
			assembly.Close(context.Background())
			return nil, err
		}
	}
	return assembly, nil
}

// serveUntilDone serves assembly on ln until ctx is cancelled, then closes
// the app and drains the requests in flight, for up to 25 s.
func serveUntilDone(ctx context.Context, cfg Config, log *slog.Logger, ln net.Listener, assembly *app.Assembly) error {
	// The api bounds the read of a request's body itself, and answers 408
	// saying so, where ReadTimeout would drop the connection unanswered.
	srv := &http.Server{
		Handler:           assembly.Handler(),
		ReadHeaderTimeout: cfg.ReadTimeout,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		assembly.Close(context.Background())
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining requests")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	assembly.Close(shutdownCtx)
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}
