package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/syncbuf"
	"github.com/ctalk/ctalk/internal/testkit"
)

// environ is a test environment for run: only the variables it names are set.
type environ map[string]string

func (e environ) get(name string) string { return e[name] }

// testEnviron is what every test server starts from: a loopback port of the
// system's choosing, a fresh SQLite file and cheap bcrypt.
func testEnviron(t *testing.T) environ {
	return environ{
		"PORT":          "0",
		"HOST":          "127.0.0.1",
		"RELAY_DB_PATH": filepath.Join(t.TempDir(), "ctalk.db"),
		"BCRYPT_COST":   "4",
	}
}

// program is a running "ctalk serve".
type program struct {
	URL    string
	stderr *syncbuf.Buffer
	cancel context.CancelFunc
	exited chan struct{} // closed when run has returned err
	err    error
}

// serveProgram starts run as "ctalk" with no arguments and waits until it
// listens. The program is stopped at the end of the test if still running.
func serveProgram(t *testing.T, env environ) *program {
	t.Helper()
	return startProgram(t, env, nil, io.Discard)
}

// startProgram starts run with args, its standard output to stdout, and
// waits until it listens, as serveProgram does.
func startProgram(t *testing.T, env environ, args []string, stdout io.Writer) *program {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &program{stderr: &syncbuf.Buffer{}, cancel: cancel, exited: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(p.exited)
		p.err = run(ctx, args, env.get, stdout, p.stderr, func(a string) { addr <- a })
	}()
	select {
	case a := <-addr:
		p.URL = "http://" + a
	case <-p.exited:
		cancel()
		t.Fatalf("run returned before listening: %v\n%s", p.err, p.stderr)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("the server did not start listening")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			t.Error("run did not return after its context was cancelled")
		}
	})
	return p
}

// stop cancels the program's context and returns what run returned.
func (p *program) stop(t *testing.T) error {
	t.Helper()
	p.cancel()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after its context was cancelled")
		return nil
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const (
	adminPW = "correct horse battery"
	userPW  = "hunter22-long"
)

func TestServeAndShutDown(t *testing.T) {
	t.Parallel()
	env := testEnviron(t)
	env["TOKEN_TTL"] = "2h"
	p := serveProgram(t, env)

	if status, body := httpGet(t, p.URL+"/health"); status != http.StatusOK || !strings.Contains(body, `"ok"`) {
		t.Errorf("/health = %d %s", status, body)
	}
	if status, body := httpGet(t, p.URL+"/ready"); status != http.StatusOK || !strings.Contains(body, `"ready"`) || !strings.Contains(body, "sqlite") {
		t.Errorf("/ready = %d %s", status, body)
	}
	status, home := httpGet(t, p.URL+"/")
	want := `claude mcp add --transport http ctalk ` + p.URL + `/mcp --header "Authorization: Bearer &lt;token&gt;"`
	if status != http.StatusOK || !strings.Contains(home, want) {
		t.Errorf("/ = %d, without the line\n%s\nin\n%s", status, want, home)
	}
	if b := buildInfo(); !strings.Contains(home, b.Version) || !strings.Contains(home, b.String()) {
		t.Errorf("/ does not show version %s and %s:\n%s", b.Version, b, home)
	}

	// A whole account flow through the program's own wiring.
	anon := testkit.Connect(t, p.URL, "", "")
	testkit.OK(t, anon, "register_organization", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": adminPW})
	testkit.OK(t, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": "umar", "name": "Umar", "password": userPW, "ownership": "alpha"})
	login := testkit.OK(t, anon, "login", map[string]any{"org_id": "acme", "user_id": "umar", "password": userPW})
	token := login["auth_token"].(string)
	// TOKEN_TTL reached the service.
	if exp, err := time.Parse(time.RFC3339Nano, login["expires_at"].(string)); err != nil || time.Until(exp) > 2*time.Hour || time.Until(exp) < time.Hour {
		t.Errorf("with TOKEN_TTL=2h, login expires at %v (%v)", login["expires_at"], err)
	}
	who := testkit.OK(t, testkit.Connect(t, p.URL, "", token), "whoami", nil)
	if who["user"].(map[string]any)["user_id"] != "umar" {
		t.Errorf("whoami = %v", who)
	}

	if err := p.stop(t); err != nil {
		t.Fatalf("run after cancel = %v, want nil (graceful shutdown)", err)
	}
	if _, err := http.Get(p.URL + "/health"); err == nil {
		t.Error("the server still answers after run returned")
	}
	// BCRYPT_COST reached the service, and the data is in RELAY_DB_PATH.
	d, err := db.Connect(context.Background(), db.Config{Path: env["RELAY_DB_PATH"]})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var hash string
	if err := d.QueryRow(context.Background(), `SELECT password_hash FROM users WHERE id = 'umar'`).Scan(&hash); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(hash, "$2a$04$") {
		t.Errorf("with BCRYPT_COST=4 the hash is %q", hash)
	}

	logs := p.stderr.String()
	for _, secret := range []string{token, adminPW, userPW} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log contains the secret %.12q...", secret)
		}
	}
	for _, want := range []string{"ctalk listening", "shutting down", "stopped"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(strings.ToLower(logs), "panic") || strings.Contains(logs, `"level":"ERROR"`) {
		t.Errorf("the log reports an error:\n%s", logs)
	}
}

func TestPublicURLOnHomePage(t *testing.T) {
	t.Parallel()
	env := testEnviron(t)
	env["PUBLIC_URL"] = "https://ctalk.example.com/mcp/"
	p := serveProgram(t, env)
	_, home := httpGet(t, p.URL+"/")
	want := `claude mcp add --transport http ctalk https://ctalk.example.com/mcp --header "Authorization: Bearer &lt;token&gt;"`
	if !strings.Contains(home, want) {
		t.Errorf("/ lacks\n%s\nin\n%s", want, home)
	}
}

func TestBadConfigurationFailsBeforeListening(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, value string }{
		{"PORT", "abc"},
		{"PORT", "-1"},
		{"PORT", "65536"},
		{"BCRYPT_COST", "99"},
		{"BCRYPT_COST", "3"},
		{"TOKEN_TTL", "-1h"},
		{"TOKEN_TTL", "forever"},
		{"TOKEN_IDLE_TTL", "0s"},
		{"LOG_LEVEL", "loud"},
		{"ALLOW_ORG_SIGNUP", "maybe"},
		{"DATABASE_URL", "mysql://x"},
		{"DATABASE_URL", "ctalk:secret@db:5432/ctalk"},
		{"PUBLIC_URL", "ftp://x"},
		{"PUBLIC_URL", "ctalk.example.com"},
		{"PORT", "80\n81"},
		{"MCP_SESSION_IDLE_TTL", "1m"},
		{"MCP_SESSION_IDLE_TTL", "never"},
		{"HOST", "http://0.0.0.0"},
		{"HOST", "0.0.0.0:8080"},
		{"HOST", "[::1]"},
		{"HOST", "my host"},
		{"HOST", "-bad.example"},
		{"TOKEN_IDLE_TTL", "721h"},
		{"SMTP_URL", "http://ctalk:secret@mail.example.com"},
		{"SMTP_URL", "smtp+insecure://ctalk:secret@mail.example.com"},
		{"MAIL_FROM", "ctalk at example"},
	} {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			env := testEnviron(t)
			env[c.name] = c.value
			listened := false
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), nil, env.get, &stdout, &stderr, func(string) { listened = true })
			if err == nil {
				t.Fatal("run succeeded")
			}
			msg := err.Error()
			if !strings.Contains(msg, c.name+":") || strings.Contains(msg, "\n") {
				t.Errorf("error %q is not one line naming %s", msg, c.name)
			}
			if strings.Contains(msg, "secret") {
				t.Errorf("error %q reveals a password", msg)
			}
			if listened {
				t.Error("the server listened despite the bad configuration")
			}
			if _, err := os.Stat(env["RELAY_DB_PATH"]); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the database file was created despite the bad configuration (%v)", err)
			}
		})
	}
	t.Run("every bad variable is named", func(t *testing.T) {
		_, err := LoadConfig(environ{"PORT": "abc", "LOG_LEVEL": "loud", "TOKEN_TTL": "-1h", "HOST": "http://x"}.get)
		if err == nil {
			t.Fatal("LoadConfig succeeded")
		}
		for _, name := range []string{"PORT:", "LOG_LEVEL:", "TOKEN_TTL:", "HOST:"} {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("error %q does not name %s", err, name)
			}
		}
	})
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c, err := LoadConfig(environ{}.get)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"PORT", c.Port, 8080},
		{"HOST", c.Host, "0.0.0.0"},
		{"RELAY_DB_PATH", c.DBPath, "ctalk.db"},
		{"DATABASE_URL", c.DatabaseURL, ""},
		{"PUBLIC_URL", c.PublicURL, ""},
		{"LOG_LEVEL", c.LogLevel, slog.LevelInfo},
		{"BCRYPT_COST", c.Auth.BcryptCost, 12},
		{"TOKEN_TTL", c.Auth.TokenTTL, 720 * time.Hour},
		{"TOKEN_IDLE_TTL", c.Auth.IdleTTL, 168 * time.Hour},
		{"ALLOW_ORG_SIGNUP", c.AllowOrgSignup, true},
		{"SIGNUP_SECRET", c.SignupSecret, ""},
		{"MCP_SESSION_IDLE_TTL", c.SessionIdleTTL, api.DefaultSessionIdleTTL},
	} {
		if f.got != f.want {
			t.Errorf("default %s = %v, want %v", f.name, f.got, f.want)
		}
	}
	if got := c.Addr(); got != "0.0.0.0:8080" {
		t.Errorf("Addr() = %q", got)
	}

	set, err := LoadConfig(environ{
		"PORT": " 9090 ", "HOST": "127.0.0.1", "RELAY_DB_PATH": "/data/x.db", "BCRYPT_COST": "10",
		"TOKEN_TTL": "24h", "TOKEN_IDLE_TTL": "1h", "LOG_LEVEL": "debug", "ALLOW_ORG_SIGNUP": "false",
		"SIGNUP_SECRET": "s", "DATABASE_URL": "postgresql://u@h/d", "PUBLIC_URL": "https://x.example/",
		"MCP_SESSION_IDLE_TTL": "1h",
	}.get)
	if err != nil {
		t.Fatal(err)
	}
	if set.Port != 9090 || set.Host != "127.0.0.1" || set.DBPath != "/data/x.db" || set.Auth.BcryptCost != 10 ||
		set.Auth.TokenTTL != 24*time.Hour || set.Auth.IdleTTL != time.Hour || set.LogLevel != slog.LevelDebug ||
		set.AllowOrgSignup || set.SignupSecret != "s" || set.DatabaseURL != "postgresql://u@h/d" || set.PublicURL != "https://x.example" ||
		set.SessionIdleTTL != time.Hour {
		t.Errorf("LoadConfig = %+v", set)
	}
}

func TestUnreachableDatabaseFailsFast(t *testing.T) {
	t.Parallel()
	env := testEnviron(t)
	env["DATABASE_URL"] = "postgres://ctalk:secret@127.0.0.1:1/ctalk?connect_timeout=2"
	listened := false
	start := time.Now()
	err := run(context.Background(), nil, env.get, io.Discard, io.Discard, func(string) { listened = true })
	if err == nil {
		t.Fatal("run succeeded without a database")
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("run took %v to give up", d)
	}
	if !strings.Contains(err.Error(), "cannot reach the postgres database") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("error %q does not say which database cannot be reached", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error %q reveals the password", err)
	}
	if listened {
		t.Error("the server listened without a database")
	}
}

func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	engines := map[string]func(t *testing.T) environ{
		"sqlite": testEnviron,
		"postgres": func(t *testing.T) environ {
			env := testEnviron(t)
			env["DATABASE_URL"] = dbtest.PostgresURL(t)
			return env
		},
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			env := engines[engine](t)
			var said string // the lines before the version
			migrate := func(t *testing.T, args ...string) (int, error) {
				t.Helper()
				var out bytes.Buffer
				err := run(context.Background(), append([]string{"migrate"}, args...), env.get, &out, io.Discard, nil)
				if err != nil {
					return 0, err
				}
				lines := strings.Split(strings.TrimSpace(out.String()), "\n")
				line := lines[len(lines)-1]
				said = strings.Join(lines[:len(lines)-1], "\n")
				var v int
				rest, found := strings.CutPrefix(line, "schema version ")
				if found {
					v, _ = strconv.Atoi(strings.Fields(rest)[0])
				}
				if !found || !strings.HasSuffix(line, "("+engine+")") {
					t.Fatalf("migrate %v printed %q", args, line)
				}
				return v, nil
			}
			if v, err := migrate(t, "version"); err != nil || v != 0 {
				t.Fatalf("version on an empty database = %d, %v; want 0", v, err)
			}
			top, err := migrate(t, "up")
			if err != nil || top < 1 {
				t.Fatalf("up = %d, %v", top, err)
			}
			if v, err := migrate(t, "up"); err != nil || v != top {
				t.Fatalf("up again = %d, %v; want %d", v, err, top)
			}
			// Versions may have gaps: one down goes to the version before top.
			prev := previousMigration(t, engine, top)
			if v, err := migrate(t, "down", "1"); err != nil || v != prev || said != fmt.Sprintf("reverted migration %d", top) {
				t.Fatalf("down 1 = %d, %v, saying %q; want %d, saying it reverted %d", v, err, said, prev, top)
			}
			if v, err := migrate(t, "version"); err != nil || v != prev {
				t.Fatalf("version = %d, %v; want %d", v, err, prev)
			}
			if v, err := migrate(t, "up"); err != nil || v != top {
				t.Fatalf("up = %d, %v; want %d", v, err, top)
			}
			// More than are applied reverts them all and says so; then
			// there is nothing to revert, which is no error.
			all, _ := db.Migrations(db.Engine(engine))
			if v, err := migrate(t, "down", "99"); err != nil || v != 0 ||
				!strings.HasPrefix(said, fmt.Sprintf("reverted %d migrations, versions %d, %d,", len(all), top, prev)) ||
				!strings.Contains(said, fmt.Sprintf("(99 asked, %d applied); none is applied now, and schema_migrations is dropped", len(all))) {
				t.Fatalf("down 99 = %d, %v, saying %q; want 0, saying all %d were reverted", v, err, said, len(all))
			}
			if v, err := migrate(t, "down", "1"); err != nil || v != 0 || said != "nothing to revert: no migration is applied" {
				t.Fatalf("down 1 at version 0 = %d, %v, saying %q; want 0, saying nothing was reverted", v, err, said)
			}
			if v, err := migrate(t, "up"); err != nil || v != top {
				t.Fatalf("up = %d, %v; want %d", v, err, top)
			}
			for _, bad := range [][]string{{}, {"down"}, {"down", "x"}, {"down", "0"}, {"sideways"}} {
				if _, err := migrate(t, bad...); err == nil {
					t.Errorf("migrate %v succeeded", bad)
				}
			}
			// The server starts on the migrated database.
			serveProgram(t, env)
		})
	}
}

func TestClosedSignup(t *testing.T) {
	t.Parallel()
	const secret = "let-me-in-please"
	env := testEnviron(t)
	env["ALLOW_ORG_SIGNUP"] = "false"
	env["SIGNUP_SECRET"] = secret
	p := serveProgram(t, env)
	anon := testkit.Connect(t, p.URL, "", "")
	org := map[string]any{"org_id": "acme", "name": "Acme", "admin_password": adminPW}
	testkit.Fail(t, anon, "register_organization", org, "needs the signup_secret")
	org["signup_secret"] = "wrong"
	testkit.Fail(t, anon, "register_organization", org, "needs the signup_secret")
	org["signup_secret"] = secret
	testkit.OK(t, anon, "register_organization", org)
	if strings.Contains(p.stderr.String(), secret) {
		t.Error("the log contains SIGNUP_SECRET")
	}

	t.Run("without a secret nobody may sign up", func(t *testing.T) {
		env := testEnviron(t)
		env["ALLOW_ORG_SIGNUP"] = "false"
		p := serveProgram(t, env)
		anon := testkit.Connect(t, p.URL, "", "")
		testkit.Fail(t, anon, "register_organization", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": adminPW}, "sign-up is closed")
		testkit.Fail(t, anon, "register_organization", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": adminPW, "signup_secret": ""}, "sign-up is closed")
	})
}

func TestOtherCommands(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, environ{}.get, &out, io.Discard, nil); err != nil || !strings.HasPrefix(out.String(), "ctalk ") {
		t.Errorf("version = %q, %v", out.String(), err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"help"}, environ{}.get, &out, io.Discard, nil); err != nil || !strings.Contains(out.String(), "ctalk migrate up") {
		t.Errorf("help = %q, %v", out.String(), err)
	}
	err := run(context.Background(), []string{"frobnicate"}, environ{}.get, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), `unknown command "frobnicate"`) {
		t.Errorf("unknown command: %v", err)
	}
}

// TestShutdownDrainsInFlightRequests cancels the program while a request is
// half sent: the request must still be answered, and run return nil.
func TestShutdownDrainsInFlightRequests(t *testing.T) {
	t.Parallel()
	p := serveProgram(t, testEnviron(t))
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"slow","version":"1"}}}`
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Opted in to anonymous set-up, so that initialize is answered 200.
	fmt.Fprintf(conn, "POST /mcp?setup=1 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:20])
	// Give the server a moment to read the headers, making the request
	// in flight rather than a connection not yet begun.
	time.Sleep(50 * time.Millisecond)

	p.cancel()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.stderr.String(), "shutting down") {
		if time.Now().After(deadline) {
			t.Fatal("the program did not begin shutting down")
		}
		time.Sleep(5 * time.Millisecond)
	}
	io.WriteString(conn, body[20:])
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("in-flight request during shutdown: %v; want it answered\n%s", err, p.stderr)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"protocolVersion"`) {
		t.Errorf("in-flight request during shutdown: %d %s; want it answered", resp.StatusCode, b)
	}
	<-p.exited
	if p.err != nil {
		t.Errorf("run = %v, want nil", p.err)
	}
}

// TestMailConfig: SMTP_URL and MAIL_FROM are read together, need PUBLIC_URL
// (the links in mails start with it, never with a request's Host), and an
// error never repeats SMTP_URL's password.
func TestMailConfig(t *testing.T) {
	c, err := LoadConfig(environ{"SMTP_URL": "smtp://ctalk:s3cret@mail.example.com:587", "MAIL_FROM": "ctalk <ctalk@example.com>", "PUBLIC_URL": "https://ctalk.example.com"}.get)
	if err != nil || !c.Mail.Enabled() || c.Mail.From != "ctalk <ctalk@example.com>" {
		t.Fatalf("LoadConfig: %+v, %v", c.Mail, err)
	}
	_, err = LoadConfig(environ{"SMTP_URL": "smtp://ctalk:s3cret@mail.example.com:587", "MAIL_FROM": "ctalk@example.com"}.get)
	if err == nil || !strings.Contains(err.Error(), "SMTP_URL: needs PUBLIC_URL") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("without PUBLIC_URL: %v", err)
	}
	if c, err := LoadConfig(environ{}.get); err != nil || c.Mail.Enabled() {
		t.Errorf("unset: %+v, %v", c.Mail, err)
	}
}

// TestLocalServerMailsToTheLog holds that a server tried on one machine,
// with no PUBLIC_URL and mail going to the log, sends what it would send,
// with links to itself: an invite's mail is in the log, its link on the
// server's own port, and notifications are on.
func TestLocalServerMailsToTheLog(t *testing.T) {
	t.Parallel()
	env := testEnviron(t)
	env["SMTP_URL"] = "log:"
	p := serveProgram(t, env)

	anon := testkit.Connect(t, p.URL, "", "")
	testkit.OK(t, anon, "register_organization", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": adminPW})
	testkit.OK(t, anon, "invite_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "email": "john@example.com", "user_id": "john", "name": "John"})

	port := p.URL[strings.LastIndex(p.URL, ":")+1:]
	logs := p.stderr.String()
	for _, want := range []string{"SMTP_URL=log:", "john@example.com", "http://localhost:" + port + "/"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "notifications are off") {
		t.Errorf("notifications are off on a loopback server:\n%s", logs)
	}
}

func TestLocalURL(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8123}
	for _, c := range []struct {
		name     string
		env      environ
		want     string
		onlyHere bool
	}{
		{"loopback host", environ{"HOST": "127.0.0.1"}, "http://localhost:8123", false},
		{"localhost", environ{"HOST": "localhost"}, "http://localhost:8123", false},
		{"laptop default", environ{}, "http://localhost:8123", true},
		{"public URL set", environ{"PUBLIC_URL": "https://ctalk.example.com"}, "", false},
		{"Postgres on all addresses", environ{"DATABASE_URL": "postgres://db.example.com/ctalk"}, "", false},
		{"Render", environ{"RENDER": "true"}, "", false},
		{"Railway", environ{"RAILWAY_PROJECT_ID": "p"}, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := LoadConfig(c.env.get)
			if err != nil {
				t.Fatal(err)
			}
			got, onlyHere := cfg.LocalURL(addr)
			if got != c.want || onlyHere != c.onlyHere {
				t.Errorf("LocalURL = %q, %v; want %q, %v", got, onlyHere, c.want, c.onlyHere)
			}
		})
	}
}
