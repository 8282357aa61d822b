package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ctalk/ctalk/access"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/orgs"
)

// Operator is what the server's operator does from its shell, beside the
// serving replicas and over the same database, with nothing served: the
// last resort where a rule that no agent can get around leaves a person
// no way on inside ctalk.
type Operator struct {
	auth   *auth.Service
	audit  *audit.Log
	access *access.Service
	notify *notify.Service
}

// NewOperator assembles the parts an operator's command needs over d,
// configured as the server is by w (its mail, its links). Close it.
func NewOperator(d *db.DB, w Wiring) (*Operator, error) {
	a, err := auth.NewService(d, w.Auth)
	if err != nil {
		return nil, err
	}
	log := w.API.Logger
	if log == nil {
		log = slog.Default()
	}
	o := orgs.NewService(d, a)
	sender := newSender(&w, log)
	return &Operator{
		auth:   a,
		audit:  audit.NewLog(d, log),
		access: access.New(access.Config{Mail: w.Mail, PublicURL: w.linkURL(), Logger: log}, a, o, sender),
		// Its notices are queued for the serving replicas' workers.
		notify: notify.NewService(d, notify.Config{PublicURL: w.linkURL(), Logger: log}, nil),
	}, nil
}

// WaitingPasskeys lists the passkeys of every org that wait for
// confirmation (see auth.Service.WaitingPasskeys).
func (op *Operator) WaitingPasskeys(ctx context.Context) ([]auth.PendingPasskey, error) {
	return op.auth.WaitingPasskeys(ctx)
}

// ConfirmPasskey confirms the waiting passkey id as the server's operator
// (see auth.Service.ConfirmWaitingPasskey), records it in the org's audit
// log, and tells the person by mail and by their webhooks and browsers,
// as an admin's approval is told.
func (op *Operator) ConfirmPasskey(ctx context.Context, id string) (*auth.PendingPasskey, error) {
	start := time.Now()
	p, err := op.auth.ConfirmWaitingPasskey(ctx, id)
	if err != nil {
		return nil, err
	}
	op.audit.Record(audit.Event{At: start.UTC(), OrgID: p.OrgID, UserID: p.UserID, Tool: "operator:confirm_passkey", Outcome: "ok",
		DurationMS: float64(time.Since(start).Microseconds()) / 1000, IDs: []string{p.UserID}, Factor: audit.FactorOperator})
	op.access.TellPasskey(ctx, p.OrgID, p.UserID, p.Name, access.PasskeyConfirmed, "")
	if err := op.notify.TellSecurity(ctx, p.OrgID, p.UserID, fmt.Sprintf("A passkey %q of your account was confirmed by the operator of this ctalk server.", p.Name)); err != nil {
		return p, fmt.Errorf("the passkey is confirmed, but the notice to its person was not queued: %w", err)
	}
	return p, nil
}

// Close writes the audit events still queued and waits for the mails sent.
func (op *Operator) Close() {
	op.access.Wait()
	op.audit.Close()
}
