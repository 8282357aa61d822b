package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/internal/syncbuf"
	"github.com/ctalk/ctalk/internal/testkit"
)

// Pooled is a fresh Postgres database behind a PgBouncer in transaction
// mode, as hosted Postgres hands out (Neon's pooled URL, Supabase's pooler).
type Pooled struct {
	// Name is the database's name.
	Name string
	// URL goes through PgBouncer; DirectURL goes straight to Postgres.
	URL, DirectURL string
}

// PgBouncer creates an empty database on the TEST_DATABASE_URL server and
// starts a PgBouncer (Debian's pgbouncer package) in transaction mode in front
// of it, on a free port, both gone when the test ends. It skips the test,
// saying why, when TEST_DATABASE_URL is unset or the pgbouncer binary is
// absent. A pooler's server connections do not take a per-schema
// search_path, so this gives the test a database of its own instead.
func PgBouncer(t testing.TB) Pooled {
	t.Helper()
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		t.Skip("skipping PgBouncer: TEST_DATABASE_URL is not set (.ci/run sets it; see README)")
	}
	bin := pgbouncerBinary(t)
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		t.Fatalf("TEST_DATABASE_URL is not a URL: %v", err)
	}
	name, direct := createDatabase(t, base, u)
	port := testkit.FreePort(t)
	dir := writePgBouncerConfig(t, u, name, port)
	exited, out := startPgBouncer(t, bin, dir)

	pooled := direct
	pooled.Host = net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	p := Pooled{Name: name, URL: pooled.String(), DirectURL: direct.String()}
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := ping(p.URL)
		if err == nil {
			return p
		}
		select {
		case <-exited:
			t.Fatalf("pgbouncer exited: %s", strings.TrimSpace(out.String()))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgbouncer does not answer on port %d after 15 s: %v\n%s", port, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pgbouncerBinary finds PgBouncer, or skips the test saying how to get it.
func pgbouncerBinary(t testing.TB) string {
	bin, err := exec.LookPath("pgbouncer")
	if err == nil {
		return bin
	}
	if _, serr := os.Stat("/usr/sbin/pgbouncer"); serr != nil {
		t.Skip("skipping PgBouncer: no pgbouncer binary on PATH or in /usr/sbin (apt-get install pgbouncer; .ci/run installs it)")
	}
	return "/usr/sbin/pgbouncer"
}

// createDatabase creates a database of a random name on the server of base,
// dropped when the test ends, and returns its name and direct URL.
func createDatabase(t testing.TB, base string, u *url.URL) (string, url.URL) {
	var b [6]byte
	rand.Read(b[:])
	name := "ctalk_pooled_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("TEST_DATABASE_URL: %v", err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database on TEST_DATABASE_URL: %v", err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer admin.Close()
		admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
	})
	direct := *u
	direct.Path = "/" + name
	q := direct.Query()
	q.Del("search_path")
	direct.RawQuery = q.Encode()
	return name, direct
}

// writePgBouncerConfig writes a transaction-mode configuration in front of
// database name on u's server, listening on port, and returns its folder.
func writePgBouncerConfig(t testing.TB, u *url.URL, name string, port int) string {
	user := u.User.Username()
	passwordParam := ""
	if password, ok := u.User.Password(); ok {
		passwordParam = " password=" + password
	}
	dir := t.TempDir()
	ini := fmt.Sprintf(`[databases]
%s = host=%s port=%s dbname=%s user=%s%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = 4
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
`, name, u.Hostname(), portOf(u), name, user, passwordParam, port, filepath.Join(dir, "users.txt"))
	if err := os.WriteFile(filepath.Join(dir, "pgbouncer.ini"), []byte(ini), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.txt"), []byte(fmt.Sprintf("%q %q\n", user, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startPgBouncer runs PgBouncer on the configuration in dir until the test
// ends; exited closes when it stops, out holds what it printed.
func startPgBouncer(t testing.TB, bin, dir string) (exited chan struct{}, out *syncbuf.Buffer) {
	args := []string{filepath.Join(dir, "pgbouncer.ini")}
	if os.Geteuid() == 0 {
		// PgBouncer refuses to run as root; it switches to this user.
		os.Chmod(dir, 0o755)
		args = append([]string{"-u", "nobody"}, args...)
	}
	out = &syncbuf.Buffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pgbouncer: %v", err)
	}
	exited = make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("pgbouncer output:\n%s", out.String())
		}
	})
	return exited, out
}

func ping(u string) error {
	d, err := sql.Open("pgx", u)
	if err != nil {
		return err
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return d.PingContext(ctx)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return "5432"
}
