package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/demo"
	"github.com/ctalk/ctalk/mail"
)

// demoHelp is printed by "ctalk demo --help".
const demoHelp = `ctalk demo: serve a demonstration organization on this machine.

Usage:
  ctalk demo

It creates Acme Robotics in a new SQLite database in a temporary folder:
alice (an admin), bob, carol and dev, each owning something; questions
waiting for alice, one with her agent's draft; a channel conversation of
people and agents; a shared answer; a week of tool calls for the overview.
Then it serves it on 127.0.0.1:$PORT (8080 by default) and prints how to
sign in and connect an agent.

Everyone's password is printed, so the demo serves only on this machine:
HOST may name a loopback address only. DATABASE_URL and RELAY_DB_PATH are
ignored, and the database is deleted when the demo stops (Ctrl-C). Mail
goes to the log (SMTP_URL=log:) unless SMTP_URL is set.
`

// demoServe serves the demo organization on a throwaway database.
func demoServe(ctx context.Context, cfg Config, log *slog.Logger, getenv func(string) string, stdout io.Writer, onListen func(string)) error {
	if err := onlyHere(&cfg, getenv, "the demo prints everyone's password"); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "ctalk-demo-")
	if err != nil {
		return fmt.Errorf("demo database: %w", err)
	}
	defer os.RemoveAll(dir)
	cfg.DatabaseURL, cfg.DatabaseURLUnpooled, cfg.DatabaseRole, cfg.DBPath = "", "", "", filepath.Join(dir, "ctalk.db")
	if cfg.Mail.URL == "" {
		cfg.Mail.URL = mail.LogURL
	}
	var clock *demo.Clock
	return serve(ctx, cfg, log, onListen, serveHooks{
		opened: func(d *db.DB) {
			clock = demo.NewClock(d.Now)
			d.Now = clock.Now
		},
		ready: func(ctx context.Context, a *app.Assembly, base string) error {
			org, err := demo.Seed(ctx, clock, a)
			if err != nil {
				return fmt.Errorf("demo organization: %w", err)
			}
			fmt.Fprint(stdout, demoLines(org, base))
			return nil
		},
	})
}

// demoLines tells how to open the demo organization org served at base.
func demoLines(org *demo.Org, base string) string {
	return fmt.Sprintf(`ctalk demo: Acme Robotics, with questions waiting for %[2]s, one with a draft.

  Open      %[1]s/signin
  Sign in   organization %[3]s, user %[2]s (admin), password %[4]s
            (%[5]s have the same password)
  Agent     claude mcp add --transport http ctalk-demo %[1]s/mcp

Everything is deleted when the demo stops (Ctrl-C).
`, base, org.UserID, org.OrgID, demo.Password, strings.Join(demo.People[1:], ", "))
}

// onlyHere binds a server that must serve this machine alone, for why, to
// 127.0.0.1 unless HOST names another loopback address, and refuses any
// other HOST.
func onlyHere(cfg *Config, getenv func(string) string, why string) error {
	if getenv("HOST") == "" {
		cfg.Host = "127.0.0.1"
	}
	if ip := net.ParseIP(cfg.Host); !strings.EqualFold(cfg.Host, "localhost") && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%s, so it serves only on this machine: unset HOST or set it to 127.0.0.1, not %q", why, cfg.Host)
	}
	return nil
}
