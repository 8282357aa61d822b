package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db"
)

// passkeysHelp is printed by "ctalk passkeys --help".
const passkeysHelp = `ctalk passkeys: confirm a person's first passkey from the server's shell.

Usage:
  ctalk passkeys waiting       list the passkeys waiting for confirmation
  ctalk passkeys confirm ID    confirm the waiting passkey ID

In an organization whose approval_factor is passkey, the first passkey of
someone who has none works only once confirmed by a link mailed to them or
by an admin who verifies with a passkey of their own: a password, which
their agent may know, never adds one. On a server that sends no email, once
no admin has a passkey, nobody in the organization can confirm one. The
operator of the server can, from its shell: a factor no member's agent
holds. Confirm only a passkey its person asked you to, by a way you trust
(in person, a call), and check the name and time it was added.

"waiting" prints each passkey's id, organization, member, name and when it
was added. "confirm" records the confirmation in the organization's audit
log (tool operator:confirm_passkey) and tells the person by mail, where the
server sends email, and by their webhooks and browsers. Both work on the
database the environment names (DATABASE_URL, else RELAY_DB_PATH), beside
the running server.
`

// checkPasskeysArgs refuses a passkeys command line before anything is
// opened.
func checkPasskeysArgs(args []string) error {
	switch {
	case len(args) == 0:
		return errors.New("passkeys needs one of: waiting, confirm ID; see \"ctalk passkeys --help\"")
	case args[0] == "waiting" && len(args) == 1, args[0] == "confirm" && len(args) == 2:
		return nil
	case args[0] == "waiting":
		return fmt.Errorf("passkeys waiting: unexpected argument %q; see \"ctalk passkeys --help\"", args[1])
	case args[0] == "confirm" && len(args) == 1:
		return errors.New("passkeys confirm needs the id of the passkey to confirm, as \"ctalk passkeys waiting\" lists it")
	case args[0] == "confirm":
		return fmt.Errorf("passkeys confirm: unexpected argument %q; it confirms one passkey at a time", args[2])
	}
	return fmt.Errorf("unknown passkeys command %q: use waiting or confirm ID; see \"ctalk passkeys --help\"", args[0])
}

// openServerDB opens the running server's database for an operator's
// command, refusing one that holds no ctalk schema (a wrong DATABASE_URL or
// RELAY_DB_PATH) rather than creating it.
func openServerDB(ctx context.Context, cfg Config, log *slog.Logger) (*db.DB, error) {
	d, err := db.Connect(ctx, dbConfig(cfg, log))
	if err != nil {
		return nil, err
	}
	if v, _, err := d.MigrationVersion(); err != nil || v == 0 {
		d.Close()
		if err == nil {
			err = errors.New("this database holds no ctalk schema yet: check DATABASE_URL or RELAY_DB_PATH, which should name the server's database")
		}
		return nil, err
	}
	return d, nil
}

// passkeys runs "ctalk passkeys waiting" or "ctalk passkeys confirm ID".
func passkeys(ctx context.Context, cfg Config, log *slog.Logger, args []string, stdout io.Writer) error {
	d, err := openServerDB(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer d.Close()
	op, err := app.NewOperator(d, wiring(cfg, log))
	if err != nil {
		return err
	}
	defer op.Close()
	ctx = ctalk.AsOperator(ctx, "passkeys command")
	if args[0] == "confirm" {
		p, err := op.ConfirmPasskey(ctx, args[1])
		if p != nil {
			fmt.Fprintf(stdout, "confirmed the passkey %q of %s in %s (added %s); they were told\n", p.Name, p.UserID, p.OrgID, p.CreatedAt.UTC().Format("2006-01-02 15:04 MST"))
		}
		return err
	}
	waiting, err := op.WaitingPasskeys(ctx)
	if err != nil {
		return err
	}
	if len(waiting) == 0 {
		fmt.Fprintln(stdout, "no passkey waits for confirmation")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tORG\tMEMBER\tNAME\tADDED")
	for _, p := range waiting {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%q\t%s\n", p.ID, p.OrgID, p.UserID, p.Name, p.CreatedAt.UTC().Format("2006-01-02 15:04 MST"))
	}
	return tw.Flush()
}
