package main

// The throughput phases: GET /health, whoami, ask_person, check_inbox and
// whole exchanges, each measured beside the limits that bound it, and the
// targets judged on them.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/mcpclient"
)

// phaseHealth measures GET /health beside the same request to a bare
// net/http handler.
func (r *runner) phaseHealth(ctx context.Context) error {
	get := func(url string) func(*recorder) call {
		return func(*recorder) call { return func(ctx context.Context) error { return r.cl.get(ctx, url) } }
	}
	r.compare(ctx, "health",
		row{"http", opBareHealth, get(r.floors.bare + "/health")},
		row{"http", "GET /health", get(r.url + "/health")})
	return nil
}

// phaseWhoami measures whoami beside the mcp-go floor's trivial tool and two
// MCP pings, which bound it from below: what any request costs the server,
// and any request with a token to check.
func (r *runner) phaseWhoami(ctx context.Context) error {
	o, err := r.mainOrg(ctx)
	if err != nil {
		return err
	}
	floor, err := r.connectAll(ctx, r.floors.mcp, make([]string, len(o.wire)))
	if err != nil {
		return fmt.Errorf("connect to the mcp-go floor: %w", err)
	}
	floorWire := make([]*mcpclient.Wire, len(floor))
	for i, cs := range floor {
		floorWire[i] = r.cl.wire(r.floors.mcp, "", cs)
	}
	// A ping without a token goes on a session opened without one: a
	// session belongs to the credential that opened it.
	anon, err := r.connectAll(ctx, r.url, make([]string, len(o.wire)))
	if err != nil {
		return fmt.Errorf("connect without a token: %w", err)
	}
	anonWire := make([]*mcpclient.Wire, len(anon))
	for i, cs := range anon {
		anonWire[i] = r.cl.wire(r.url, "", cs)
	}
	ping := func(withToken bool) func(*recorder) call {
		sessions := anonWire
		if withToken {
			sessions = o.wire
		}
		return func(rec *recorder) call {
			ws := sessions[rec.pick(len(sessions))]
			return func(ctx context.Context) error { return ws.Ping(ctx, withToken) }
		}
	}
	r.compare(ctx, "whoami",
		row{"wire", opFloorTool, func(rec *recorder) call { return wireCall(floorWire[rec.pick(len(floorWire))], floorTool, nil) }},
		row{"wire", opPing, ping(false)},
		row{"wire", opPingToken, ping(true)},
		row{"wire", wireOp("whoami"), func(rec *recorder) call { return wireCall(o.wire[rec.pick(len(o.wire))], "whoami", nil) }},
		row{"tool", "whoami", func(rec *recorder) call { return toolCall(o.sessions[rec.pick(len(o.sessions))], "whoami", nil) }})
	return nil
}

// The rows of the two MCP pings.
const (
	opPing      = "MCP ping (wire)"
	opPingToken = "MCP ping + token (wire)"
)

// wireOp names the wire-client row of a tool.
func wireOp(tool string) string { return tool + " (wire)" }

// phaseAsk measures the INSERT of ask_person, its whole transaction and the
// service call, then the tool. Each runs in a fresh org of its own: the two
// limit counts of an ask scan the asker's questions of the last minute and
// the pair's of the last five, so a run must not inherit another's rows.
func (r *runner) phaseAsk(ctx context.Context) error {
	type askRun struct {
		op, kind string
		ask      func(o *org, a, b int) call
	}
	var runs []askRun
	if r.db != nil {
		runs = append(runs,
			askRun{"SQL insert only", "sql", func(o *org, a, b int) call {
				return func(ctx context.Context) error { return insertQuestion(ctx, r.db, o.id, o.users[a], o.users[b]) }
			}},
			askRun{"SQL ask transaction", "sql", func(o *org, a, b int) call {
				return func(ctx context.Context) error { return askTransaction(ctx, r.db, o.id, o.users[a], o.users[b]) }
			}},
			askRun{"inbox.Service.Ask", "service", func(o *org, a, b int) call {
				return func(ctx context.Context) error {
					_, err := r.inbox.Ask(ctx, ctalk.Caller{OrgID: o.id, UserID: o.users[a]}, inbox.Ask{To: o.users[b], Text: questionText})
					return err
				}
			}})
	}
	runs = append(runs,
		askRun{wireOp("ask_person"), "wire", func(o *org, a, b int) call {
			return wireCall(o.wire[a], "ask_person", map[string]any{"to_user_id": o.users[b], "question": questionText})
		}},
		askRun{"ask_person", "tool", func(o *org, a, b int) call {
			return toolCall(o.sessions[a], "ask_person", map[string]any{"to_user_id": o.users[b], "question": questionText})
		}})
	for i, run := range runs {
		if run.kind == "wire" && r.cfg.Notify {
			if err := r.askNotified(ctx, run.ask); err != nil {
				return err
			}
			continue
		}
		o, err := r.newOrg(ctx, r.url, "ask-"+strconv.Itoa(i), r.cfg.Users, run.kind == "wire" || run.kind == "tool")
		if err != nil {
			return err
		}
		r.throughput(ctx, "ask", run.kind, run.op, func(rec *recorder) call {
			a, b := rec.pair(len(o.users))
			return run.ask(o, a, b)
		})
	}
	return nil
}

// phaseInbox measures check_inbox's SELECT, the service call and the tool,
// on inboxes of ten pending questions from ten senders each.
func (r *runner) phaseInbox(ctx context.Context) error {
	o, err := r.mainOrg(ctx)
	if err != nil {
		return err
	}
	n := len(o.users)
	user := func(rec *recorder) string { return o.users[rec.pick(n)] }
	var rows []row
	if r.db != nil {
		rows = append(rows, row{"sql", "SQL inbox select", func(rec *recorder) call {
			u := user(rec)
			return func(ctx context.Context) error { return selectInboxPage(ctx, r.db, o.id, u) }
		}}, row{"service", "inbox.Service.Inbox", func(rec *recorder) call {
			u := user(rec)
			return func(ctx context.Context) error {
				_, _, err := r.inbox.Inbox(ctx, ctalk.Caller{OrgID: o.id, UserID: u}, inboxPageLimit, "")
				return err
			}
		}})
	}
	rows = append(rows,
		row{"wire", wireOp("whoami"), func(rec *recorder) call { return wireCall(o.wire[rec.pick(n)], "whoami", nil) }},
		row{"wire", wireOp("check_inbox"), func(rec *recorder) call { return wireCall(o.wire[rec.pick(n)], "check_inbox", nil) }},
		row{"tool", "check_inbox", func(rec *recorder) call { return toolCall(o.sessions[rec.pick(n)], "check_inbox", nil) }})
	r.compare(ctx, "inbox", rows...)
	return nil
}

// cycleOp names the whole cycle in the statistics.
const cycleOp = "full cycle (7 calls)"

// phaseCycle runs whole exchanges: ask_person, check_inbox, propose_response,
// send_response, wait_for_reply, then whoami and list_users, between random
// pairs of users.
func (r *runner) phaseCycle(ctx context.Context) error {
	o, err := r.newOrg(ctx, r.url, "cycle", r.cfg.Users, true)
	if err != nil {
		return err
	}
	n := len(o.users)
	r.addOps(runPhase(ctx, r.spec("cycle", "tool"), func(ctx context.Context, w int, rec *recorder) error {
		a, b := rec.pair(n)
		start := time.Now()
		step := func(tool string, cs *mcp.ClientSession, args map[string]any) (m map[string]any, err error) {
			err = rec.do(tool, func() error {
				c, cancel := callCtx(ctx)
				defer cancel()
				m, err = callTool(c, cs, tool, args)
				return err
			})
			return m, err
		}
		m, err := step("ask_person", o.sessions[a], map[string]any{"to_user_id": o.users[b], "question": questionText})
		if err != nil {
			return err
		}
		id := str(m, "message_id")
		for _, s := range []struct {
			tool string
			cs   *mcp.ClientSession
			args map[string]any
		}{
			{"check_inbox", o.sessions[b], nil},
			{"propose_response", o.sessions[b], map[string]any{"message_id": id, "draft_text": answerText}},
			{"send_response", o.sessions[b], map[string]any{"message_id": id, "final_text": answerText}},
			{"wait_for_reply", o.sessions[a], map[string]any{"message_id": id, "timeout_s": 30}},
			{"whoami", o.sessions[a], nil},
			{"list_users", o.sessions[a], nil},
		} {
			if _, err := step(s.tool, s.cs, s.args); err != nil {
				return err
			}
		}
		rec.add(cycleOp, time.Since(start), nil)
		return nil
	}))
	return nil
}

// throughputTargets compares each row with the limit that bounds it, and
// judges the throughput targets.
func (r *runner) throughputTargets() {
	res := r.res
	ratio := res.ratio
	add := func(rt Ratio, _ bool) { res.Ratios = append(res.Ratios, rt) }
	// The targets are judged on the wire rows, sent through the same net/http
	// client as GET /health; the go-sdk rows add that client's own work. Every
	// tool is compared with the bare mcp-go floor's trivial tool, and /health
	// with a bare net/http handler.
	health, healthOK := ratio("health", "GET /health", "health", opBareHealth, 0.9)
	add(health, healthOK)
	whoami, whoamiOK := ratio("whoami", wireOp("whoami"), "whoami", opFloorTool, 0.6)
	add(whoami, whoamiOK)
	inbox, inboxOK := ratio("inbox", wireOp("check_inbox"), "inbox", wireOp("whoami"), 0.5)
	add(inbox, inboxOK)
	for _, o := range []struct{ phase, op string }{
		{"whoami", opPing}, {"whoami", opPingToken}, {"whoami", "whoami"},
		{"ask", wireOp("ask_person")}, {"ask", "ask_person"}, {"inbox", wireOp("check_inbox")}, {"inbox", "check_inbox"},
	} {
		add(ratio(o.phase, o.op, "whoami", opFloorTool, 0))
	}
	add(ratio("whoami", opFloorTool, "health", opBareHealth, 0))
	add(ratio("whoami", wireOp("whoami"), "health", "GET /health", 0))
	add(ratio("whoami", wireOp("whoami"), "whoami", opPingToken, 0))
	ask, askOK := ratio("ask", wireOp("ask_person"), "ask", "SQL insert only", 0.5)
	add(ask, askOK)
	add(ratio("ask", "ask_person", "ask", "SQL ask transaction", 0))
	add(ratio("ask", "inbox.Service.Ask", "ask", "SQL ask transaction", 0))
	add(ratio("inbox", wireOp("check_inbox"), "inbox", "SQL inbox select", 0))
	add(ratio("inbox", "inbox.Service.Inbox", "inbox", "SQL inbox select", 0))

	ratioTarget := res.ratioTarget
	ratioTarget("GET /health >= 90% of a bare net/http handler", health, healthOK, "needs the health phase")
	ratioTarget("whoami >= 60% of the bare mcp-go floor's trivial tool", whoami, whoamiOK, "needs the whoami phase")
	ratioTarget("check_inbox (10 questions from 10 senders) >= 50% of whoami", inbox, inboxOK, "needs the whoami and inbox phases")
	ratioTarget("ask_person throughput >= 50% of the raw INSERT", ask, askOK, "needs the ask phase with database access")
}

// ratio compares the throughput of the operation tool of toolPhase with
// that of limit of limitPhase, judged against want when it is above zero.
// It reports false when either was not measured.
func (res *Result) ratio(toolPhase, tool, limitPhase, limit string, want float64) (Ratio, bool) {
	t, l := res.op(toolPhase, tool), res.op(limitPhase, limit)
	rt := Ratio{Tool: tool, Limit: limit, Status: statusInfo}
	if want > 0 {
		rt.Target = fmt.Sprintf(">= %.2f", want)
	}
	if t == nil || l == nil || l.PerSecond == 0 {
		rt.Status = statusSkipped
		return rt, false
	}
	rt.Value = t.PerSecond / l.PerSecond
	if want > 0 {
		rt.Status = pass(rt.Value >= want)
	}
	return rt, true
}

// ratioTarget adds the target name judged on rt, skipped for why unless ok.
func (res *Result) ratioTarget(name string, rt Ratio, ok bool, why string) {
	t := Target{Name: name, Want: rt.Target + " (throughput ratio)", Status: statusSkipped, Note: why}
	if ok {
		t.Got, t.Status, t.Note = fmt.Sprintf("%.2f", rt.Value), rt.Status, ""
	}
	res.Targets = append(res.Targets, t)
}
