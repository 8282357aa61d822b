package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
)

// auditHelp is printed by "ctalk audit --help".
const auditHelp = `ctalk audit: check an organization's audit log from the server's shell.

Usage:
  ctalk audit verify --org ID    check the hash chain of organization ID

Each organization's audit events form a hash chain: every event's hash
covers the previous event's hash and the event's own fields. "verify" reads
the chain in order from the checkpoint that pruning left (whose signature,
made with a key only the server holds, it checks first) to its newest
event, and prints how many events it checked and the chain's head. Where
the chain does not hold (an event edited, removed or added, a checkpoint
changed) it prints the first break and exits with status 1.

Keep the printed head somewhere else: a later check that still passes
through it shows that nothing before it changed since. It works on the
database the environment names (DATABASE_URL, else RELAY_DB_PATH), beside
the running server.
`

// errChainBroken is verify's error when the chain does not hold, after it
// printed where.
var errChainBroken = errors.New("the audit chain does not hold")

// checkAuditArgs refuses an audit command line before anything is opened,
// and returns the org to verify.
func checkAuditArgs(args []string) (string, error) {
	if len(args) == 0 {
		return "", errors.New("audit needs a command: verify --org ID; see \"ctalk audit --help\"")
	}
	if args[0] != "verify" {
		return "", fmt.Errorf("unknown audit command %q: use verify --org ID; see \"ctalk audit --help\"", args[0])
	}
	var org string
	rest := args[1:]
	switch {
	case len(rest) == 2 && rest[0] == "--org":
		org = rest[1]
	case len(rest) == 1 && strings.HasPrefix(rest[0], "--org="):
		org = strings.TrimPrefix(rest[0], "--org=")
	case len(rest) == 0:
		return "", errors.New("audit verify needs the organization: ctalk audit verify --org ID")
	default:
		return "", fmt.Errorf("audit verify: unexpected arguments %q; it takes --org ID", strings.Join(rest, " "))
	}
	id, err := ctalk.ParseID("org", org)
	if err != nil {
		return "", fmt.Errorf("audit verify: %s", ctalk.ErrorMessage(err))
	}
	return id, nil
}

// auditVerify runs "ctalk audit verify --org ID".
func auditVerify(ctx context.Context, cfg Config, log *slog.Logger, orgID string, stdout io.Writer) error {
	d, err := openServerDB(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer d.Close()
	l := audit.NewLog(d, log)
	defer l.Close()
	v, err := l.Verify(ctalk.WithOrg(ctx, orgID), orgID)
	if err != nil {
		return err
	}
	writeVerification(stdout, v)
	if v.Break != nil {
		return errChainBroken
	}
	return nil
}

// writeVerification prints what a check of a chain found.
func writeVerification(w io.Writer, v *audit.Verification) {
	if v.From > 0 {
		fmt.Fprintf(w, "checkpoint: events up to %d were pruned; the checkpoint's signature holds\n", v.From)
	}
	if v.Break != nil {
		fmt.Fprintf(w, "BROKEN at event %d", v.Break.Seq)
		if v.Break.EventID != 0 {
			fmt.Fprintf(w, " (row id %d)", v.Break.EventID)
		}
		fmt.Fprintf(w, ": %s\n%d events checked before it\n", v.Break.Reason, v.Checked)
		return
	}
	if v.Head == 0 {
		fmt.Fprintf(w, "organization %s has no chained audit events yet\n", v.OrgID)
		return
	}
	fmt.Fprintf(w, "ok: %d events checked, %d to %d\n", v.Checked, v.From+1, v.Head)
}
