package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/crypto/bcrypt"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/bridge"
	"github.com/ctalk/ctalk/orgs"
)

// localHelp is printed by "ctalk stdio --local --help".
const localHelp = `ctalk stdio --local: ctalk for the agents of one machine, with no server.

Usage:
  ctalk stdio --local [--as NAME] [--store FILE]

It serves ctalk's tools over standard input and output on a local store, a
SQLite file that every agent of this machine account shares: ask and answer
with drafts, channels with unread marks, mentions and search, waits that
wake within a fraction of a second when another agent writes. No server to
start, no sign-up, no password: each agent is a member of the organization
"local", named by --as.

Flags:
  --as NAME      who this agent is in the local organization: 1-64 of a-z,
                 0-9, - and _ (by default $CTALK_AS, else your login name).
                 Give each agent its own name to let them ask each other.
  --store FILE   the local store (by default $CTALK_STORE, else
                 $XDG_DATA_HOME/ctalk/local.db, that is
                 ~/.local/share/ctalk/local.db), created on first use.

Trust: on one machine, anyone who can open the store's file can act as any
member, so the store is only as private as your machine account and the
file's folder (created readable by you alone). Use a ctalk server when
people on different machines, or approval that only a person can give,
matter.

Example MCP client configuration (Claude Code, Cursor, ...):
  {"mcpServers": {"ctalk": {"command": "ctalk", "args": ["stdio", "--local", "--as", "builder"]}}}

Standard output carries only MCP messages; warnings go to standard error.
`

// localOrg is the organization of every local store.
const localOrg = "local"

// localConfig is what "ctalk stdio --local" was given.
type localConfig struct {
	As, Store string
}

// isLocal reports whether the arguments of "ctalk stdio" ask for the local
// store.
func isLocal(args []string) bool {
	for _, a := range args {
		if a == "--local" || a == "-local" || a == "--local=true" {
			return true
		}
	}
	return false
}

// parseLocal reads the flags of "ctalk CMD --local" (stdio or serve).
func parseLocal(cmd string, args []string, getenv func(string) string) (localConfig, error) {
	name := cmd + " --local"
	fs := flag.NewFlagSet("ctalk "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Bool("local", true, "")
	as := fs.String("as", getenv("CTALK_AS"), "")
	store := fs.String("store", getenv("CTALK_STORE"), "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return localConfig{}, err
		}
		return localConfig{}, fmt.Errorf("%s: %v; see \"ctalk %s --help\"", name, err, name)
	}
	if fs.NArg() > 0 {
		return localConfig{}, fmt.Errorf("%s: unexpected argument %q; see \"ctalk %s --help\"", name, fs.Arg(0), name)
	}
	c := localConfig{As: strings.ToLower(strings.TrimSpace(*as)), Store: strings.TrimSpace(*store)}
	if c.As == "" {
		if u, err := user.Current(); err == nil {
			c.As = strings.ToLower(u.Username)
		}
	}
	if _, err := ctalk.ParseID("--as", c.As); err != nil {
		return localConfig{}, fmt.Errorf("%s: %s; give a name with --as NAME or CTALK_AS", name, ctalk.ErrorMessage(err))
	}
	if c.Store == "" {
		dir := getenv("XDG_DATA_HOME")
		if dir == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return localConfig{}, fmt.Errorf("%s: no home directory for the store (%v); give --store FILE", name, err)
			}
			dir = filepath.Join(home, ".local", "share")
		}
		c.Store = filepath.Join(dir, "ctalk", "local.db")
	}
	return c, nil
}

// stdioLocal runs "ctalk stdio --local": ctalk's app on the local store,
// served on a Unix socket of this process alone (privateListener), and
// the stdio bridge to it with a token of the member the agent names itself
// as, revoked when the agent goes.
func stdioLocal(ctx context.Context, args []string, getenv func(string) string, in io.Reader, out, stderr io.Writer) error {
	c, err := parseLocal("stdio", args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(out, localHelp)
		return nil
	}
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	d, err := openLocal(ctx, c, orgs.RoleMember, log)
	if err != nil {
		return err
	}
	defer d.Close()
	a, err := app.Assemble(d, app.Wiring{
		API:   api.Config{Version: buildInfo().Version, Build: buildInfo().String(), Logger: log},
		Auth:  localAuth(),
		Inbox: inbox.DefaultConfig(),
	})
	if err != nil {
		return err
	}
	defer a.Close(context.Background())
	token, sess, err := a.Auth.IssueLocalToken(ctx, localOrg, c.As, "ctalk stdio --local")
	if err != nil {
		return err
	}
	defer a.Auth.Logout(context.WithoutCancel(ctx), sess)

	ln, err := privateListener()
	if err != nil {
		return fmt.Errorf("stdio --local: %w", err)
	}
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", ln.Addr().String())
	}
	return bridge.Run(ctx, bridge.Config{Endpoint: "http://localhost/mcp", Token: token, Version: buildInfo().Version, Dial: dial}, in, out, stderr)
}

// privateListener listens on a Unix socket in a new folder that only the
// machine account can enter, removed when the listener closes: the app of
// "ctalk stdio --local" is its bridge's alone, where a loopback port would
// let any account of the machine call its tools and pages.
func privateListener() (net.Listener, error) {
	dir, err := os.MkdirTemp("", "ctalk-stdio-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "mcp.sock"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &removingListener{Listener: ln, dir: dir}, nil
}

// removingListener removes its socket's folder once closed.
type removingListener struct {
	net.Listener
	dir string
}

func (l *removingListener) Close() error {
	err := l.Listener.Close()
	os.RemoveAll(l.dir)
	return err
}

// openLocal opens the local store, creating it and its folder (for the
// machine account alone) on first use, and makes sure that the local
// organization and the member c.As exist, the latter made with role when
// new. Processes starting together take
// turns by a lock file beside the store, so that one migrates and the
// others find it migrated.
func openLocal(ctx context.Context, c localConfig, role string, log *slog.Logger) (*db.DB, error) {
	if err := os.MkdirAll(filepath.Dir(c.Store), 0o700); err != nil {
		return nil, fmt.Errorf("stdio --local: the store's folder: %w; give --store FILE in a folder you can write", err)
	}
	lock := flock.New(c.Store + ".lock")
	lockCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if ok, err := lock.TryLockContext(lockCtx, 20*time.Millisecond); !ok {
		return nil, fmt.Errorf("stdio --local: another process holds %s.lock: %v", c.Store, err)
	}
	defer lock.Unlock()
	d, err := db.Open(ctx, db.Config{Path: c.Store, PathSetting: "--store", Shared: true, Logger: log})
	if err != nil {
		return nil, err
	}
	if err := localMember(ctx, d, c.As, role); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// localAuth is the configuration of a local store's accounts: their
// passwords are random, 128 bits that nobody knows (nobody signs in to a
// local store), which need no costly hash, so they get bcrypt's least cost.
func localAuth() auth.Config {
	cfg := auth.DefaultConfig()
	cfg.BcryptCost = bcrypt.MinCost
	return cfg
}

// localMember creates the local organization and its member id, when
// missing, with passwords nobody knows.
func localMember(ctx context.Context, d *db.DB, id, role string) error {
	a, err := auth.NewService(d, localAuth())
	if err != nil {
		return err
	}
	o := orgs.NewService(d, a)
	_, err = o.Register(ctx, orgs.NewOrg{ID: localOrg, Name: "This machine", AdminPassword: rand.Text(), ApprovalMode: orgs.ApprovalAgent})
	if err != nil && ctalk.ErrorCode(err) != ctalk.EConflict {
		return fmt.Errorf("the local organization: %w", err)
	}
	_, err = o.AddUser(ctx, localOrg, orgs.NewUser{ID: id, Name: id, Password: rand.Text(), Role: role})
	if err != nil && ctalk.ErrorCode(err) != ctalk.EConflict {
		return fmt.Errorf("the local member %s: %w", id, err)
	}
	return nil
}
