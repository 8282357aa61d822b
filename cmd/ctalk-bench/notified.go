package main

// The notified server of -notify: a second in-process server wired as the
// first but with notifications on, so that the ask phase can measure
// ask_person with and without them in turns, on the same machine.

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/mail"
)

// benchEmailDomain is the domain of the harness's users' addresses; their
// mail goes to a countingSender, never out of the process.
const benchEmailDomain = "bench.invalid"

// benchPublicURL turns the notified server's notifications on: it is the
// base of the links in their mail, which nobody follows.
const benchPublicURL = "http://127.0.0.1"

// opAskNotified names the wire row of ask_person on the notified server.
const opAskNotified = "ask_person, notifications on (wire)"

// countingSender accepts every mail and counts it: the worker builds and
// sends each one as it would to an SMTP server, which costs no time here.
type countingSender struct{ sent atomic.Int64 }

func (c *countingSender) Send(context.Context, mail.Message) error {
	c.sent.Add(1)
	return nil
}

// notifiedServer is the server of -notify, with what its worker sent.
type notifiedServer struct {
	*server
	mail *countingSender
}

// startAskServer starts a server for askNotified, with notifications on
// when notified: on Postgres a replica of the primary on the same schema;
// on SQLite a fresh file of its own (name), so that the notified one's
// worker never holds the other's writer back. Both servers compared are
// started so, alike: measured against the primary, which had served the
// phases before, a second server without notifications was 0.93x to 0.98x
// as fast on Postgres.
func (r *runner) startAskServer(ctx context.Context, name string, notified bool) (*notifiedServer, error) {
	if r.primary == nil {
		return nil, fmt.Errorf("-notify needs the in-process server")
	}
	dbc := r.dbcfg
	if r.engine == db.SQLite {
		dbc.Path = filepath.Join(r.tmp, name+".db")
	}
	sc := serverConfig{DB: dbc, MetricsToken: benchMetricsToken, BcryptCost: benchBcryptCost,
		AsksPerMin: benchAsksPerMin, LoopMax: benchLoopMax, LoginRate: benchLoginRate, Log: r.slog, Label: true}
	sender := &countingSender{}
	if notified {
		sc.PublicURL, sc.Sender = benchPublicURL, sender
	}
	s, err := startServer(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("start the %s server: %w", name, err)
	}
	r.closers = append(r.closers, s.Close)
	return &notifiedServer{server: s, mail: sender}, nil
}

// askNotified measures ask on a server without notifications and on the
// notified server, both started for it, in turns (see runRows), each in a fresh org whose users have addresses, and
// notes what the notified server's worker sent.
func (r *runner) askNotified(ctx context.Context, ask func(o *org, a, b int) call) error {
	offSrv, err := r.startAskServer(ctx, "ctalk-off", false)
	if err != nil {
		return err
	}
	ns, err := r.startAskServer(ctx, "ctalk-notified", true)
	if err != nil {
		return err
	}
	off, err := r.newOrgOn(ctx, offSrv.URL, "ask-off", r.cfg.Users, true, true)
	if err != nil {
		return err
	}
	on, err := r.newOrgOn(ctx, ns.URL, "ask-notified", r.cfg.Users, true, true)
	if err != nil {
		return err
	}
	askIn := func(o *org) func(rec *recorder) call {
		return func(rec *recorder) call {
			a, b := rec.pair(len(o.users))
			return ask(o, a, b)
		}
	}
	r.compare(ctx, "ask", row{"wire", wireOp("ask_person"), askIn(off)}, row{"wire", opAskNotified, askIn(on)})
	m := &NotifiedMail{InTurns: ns.mail.sent.Load()}
	m.After = settled(ctx, &ns.mail.sent) - m.InTurns
	if o := r.res.op("ask", opAskNotified); o != nil {
		m.Questions = o.Calls - o.Errors
	}
	r.res.NotifiedMail = m
	r.note("ask phase, -notify: the server with notifications on stored %d questions, each to a recipient with an email address; its worker sent %d mails by the end of its last turn and %d more afterwards (to a sender that accepts and counts them; several questions to one person may share a mail).", m.Questions, m.InTurns, m.After)
	return nil
}

// NotifiedMail is what the notified server of -notify stored and sent.
type NotifiedMail struct {
	// Questions is how many asks it stored.
	Questions int `json:"questions"`
	// InTurns counts the mails its worker sent by the end of the phase's
	// last turn, and After those it sent once the phase had ended.
	InTurns int64 `json:"mails_in_turns"`
	After   int64 `json:"mails_after"`
}

// settled waits until n has stayed the same for half a second, for at
// most ten, and returns it.
func settled(ctx context.Context, n *atomic.Int64) int64 {
	last := n.Load()
	for range 20 {
		select {
		case <-ctx.Done():
			return n.Load()
		case <-time.After(500 * time.Millisecond):
		}
		now := n.Load()
		if now == last {
			break
		}
		last = now
	}
	return last
}

// notifiedTarget judges ask_person with notifications on against without,
// as measured in turns by askNotified.
func (r *runner) notifiedTarget() {
	rt, ok := r.res.ratio("ask", opAskNotified, "ask", wireOp("ask_person"), 0.9)
	if r.cfg.Notify {
		r.res.Ratios = append(r.res.Ratios, rt)
	}
	r.res.ratioTarget("ask_person with notifications on >= 90% of without", rt, ok, "needs the ask phase with -notify")
}
