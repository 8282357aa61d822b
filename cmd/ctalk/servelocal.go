package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/orgs"
)

// serveLocalHelp is printed by "ctalk serve --local --help".
const serveLocalHelp = `ctalk serve --local: the web app on this machine's local store.

Usage:
  ctalk serve --local [--as NAME] [--store FILE]

It serves ctalk's web app on 127.0.0.1:$PORT (8080 by default) over the
local store that "ctalk stdio --local" agents share, and prints a link
that signs your browser in as NAME (by default $CTALK_AS, else your login
name), an admin of the organization "local", with no sign-up and no
password. There you read what your agents asked and answered, and, with
approval_mode human (Admin, Organization settings), approve their drafts
yourself. The link works while this server runs; keep it to yourself.

On one machine the web app is yours only as far as your machine account
is: any process of that account can open the store, or the link if it can
read this terminal. A passkey (your profile) makes approvals need you at
the device, there too.

Flags are those of "ctalk stdio --local": --as NAME, --store FILE. HOST
may name a loopback address only.
`

// serveLocal runs "ctalk serve --local".
func serveLocal(ctx context.Context, cfg Config, log *slog.Logger, args []string, getenv func(string) string, stdout io.Writer, onListen func(string)) error {
	c, err := parseLocal("serve", args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, serveLocalHelp)
		return nil
	}
	if err != nil {
		return err
	}
	if err := onlyHere(&cfg, getenv, "the local store has no passwords"); err != nil {
		return err
	}
	// Created, with its person as an admin, under the store's lock, as
	// the agents' processes do.
	d, err := openLocal(ctx, c, orgs.RoleAdmin, log)
	if err != nil {
		return err
	}
	d.Close()
	cfg.DatabaseURL, cfg.DatabaseURLUnpooled, cfg.DatabaseRole, cfg.DBPath, cfg.sharedStore = "", "", "", c.Store, true
	cfg.Auth = localAuth()
	token := rand.Text() + rand.Text()
	return serve(ctx, cfg, log, onListen, serveHooks{
		wire: func(w *app.Wiring) {
			w.LocalSignIn = func(t string) (string, string, bool) {
				return localOrg, c.As, subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1
			}
		},
		ready: func(ctx context.Context, a *app.Assembly, base string) error {
			fmt.Fprintf(stdout, "ctalk serve --local: the web app of the local store %s.\n\n  Open  %s/local/signin/%s\n        (signs you in as %s; it works while this server runs)\n\n", c.Store, base, token, c.As)
			return nil
		},
	})
}
