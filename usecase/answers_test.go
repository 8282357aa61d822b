package usecase_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/knowledge"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/usecase"
	"github.com/ctalk/ctalk/wait"
)

// fixture is org acme with john and umar, and the use cases over its
// inbox and shared answers.
type fixture struct {
	t       *testing.T
	d       *db.DB
	in      *inbox.Service
	orgs    *orgs.Service
	answers *usecase.Answers
}

func newFixture(t *testing.T, d *db.DB) *fixture {
	t.Helper()
	a, err := auth.NewService(d, auth.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	now := d.Now()
	if _, err := dbtest.Exec(d, `INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ('acme', 'acme', 'x', $1)`, now); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"john", "umar"} {
		if _, err := dbtest.Exec(d, `INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ('acme', $1, $1, 'x', 'member', $2, $2)`, u, now); err != nil {
			t.Fatal(err)
		}
	}
	in := inbox.NewService(d, inbox.DefaultConfig(), wait.NewBroker())
	o := orgs.NewService(d, a)
	k := knowledge.NewService(d, o)
	return &fixture{t: t, d: d, in: in, orgs: o, answers: usecase.NewAnswers(in, k, slog.Default())}
}

func acme(id string) ctalk.Caller { return ctalk.Caller{OrgID: "acme", UserID: id} }

// drafted is umar's question to john with john's agent's draft.
func (f *fixture) drafted(question, draft string) string {
	f.t.Helper()
	q, err := f.in.Ask(dbtest.Operator(), acme("umar"), inbox.Ask{To: "john", Text: question})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, _, err := f.in.Propose(dbtest.Operator(), acme("john"), q.ID, draft); err != nil {
		f.t.Fatal(err)
	}
	return q.ID
}

// shared reports whether the answer to id is among the org's shared answers.
func (f *fixture) shared(id string) bool {
	f.t.Helper()
	var n int
	if err := f.d.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM shared_answers WHERE question_id = $1`, id).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n == 1
}

// TestDecideSendsAndShares: a person's approval, edit or own answer sends
// the answer and shares it as they chose, as the agent's send would; the
// agent's send of the same text afterwards sends and shares nothing more,
// whatever it proposes. A rejection and a decline send nothing.
func TestDecideSendsAndShares(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx := dbtest.Operator()

		approved := f.drafted("Which port?", "8443")
		out, err := f.answers.Decide(ctx, acme("john"), usecase.Decision{Kind: usecase.Approve, MessageID: approved, Version: 1, Share: &yes})
		if err != nil || out.Already || out.Question.Status != inbox.StatusAnswered || out.Question.Answer != "8443" || out.Sharing == nil || !out.Sharing.Shared || !f.shared(approved) {
			t.Fatalf("approve = %+v (sharing %+v), %v; want sent and shared", out, out.Sharing, err)
		}
		again, err := f.answers.Send(ctx, acme("john"), approved, "8443", &no)
		if err != nil || !again.Already || again.Sharing != nil || !f.shared(approved) {
			t.Fatalf("the agent's send after the approval = %+v, %v; want the answer as sent, still shared", again, err)
		}

		edited := f.drafted("Which host?", "db1")
		out, err = f.answers.Decide(ctx, acme("john"), usecase.Decision{Kind: usecase.Edit, MessageID: edited, Version: 1, Text: "db2, since May", Share: &no})
		if err != nil || out.Question.Answer != "db2, since May" || !out.Draft.ByPerson || out.Sharing == nil || out.Sharing.Shared || f.shared(edited) {
			t.Fatalf("edit = %+v, %v; want the person's version sent, not shared", out, err)
		}
		_, err = f.answers.Send(ctx, acme("john"), edited, "db1", &yes)
		if ctalk.ErrorCode(err) != ctalk.EConflict || !strings.Contains(ctalk.ErrorMessage(err), `"db2, since May"`) {
			t.Fatalf("the agent's send of its draft after the edit: %v; want a conflict quoting the answer sent", err)
		}

		answered := f.drafted("Who is on call?", "probably Ana")
		out, err = f.answers.Decide(ctx, acme("john"), usecase.Decision{Kind: usecase.Answer, MessageID: answered, Text: "I am.", Share: &yes})
		if err != nil || out.Question.Answer != "I am." || !f.shared(answered) {
			t.Fatalf("answer = %+v, %v", out, err)
		}

		rejected := f.drafted("Freeze?", "no")
		out, err = f.answers.Decide(ctx, acme("john"), usecase.Decision{Kind: usecase.Reject, MessageID: rejected, Version: 1, Text: "say until when", Share: &yes})
		if err != nil || out.Question != nil || !out.Draft.Rejected || out.Sharing != nil {
			t.Fatalf("reject = %+v, %v", out, err)
		}
		out, err = f.answers.Decide(ctx, acme("john"), usecase.Decision{Kind: usecase.Decline, MessageID: rejected, Text: "ask Ana"})
		if err != nil || out.Question.Status != inbox.StatusDeclined || out.Sharing != nil || f.shared(rejected) {
			t.Fatalf("decline = %+v, %v", out, err)
		}

		_, err = f.answers.Decide(ctx, acme("john"), usecase.Decision{Kind: "ignore", MessageID: rejected})
		if ctalk.ErrorCode(err) != ctalk.EInvalid {
			t.Fatalf("an unknown decision: %v, want invalid", err)
		}
	})
}

// TestCardDecidesOnlyInAgentModeAtCommit: the chat client's card decides
// only in agent approval mode, as the decision's own transaction reads it.
// An admin's switch to human mode just after the card saw agent mode (its
// door's own check) refuses the card's approval, edit and answer: nothing
// is sent, approved or heard of. The person's decision in the web app
// still sends in human mode, and the card decides again in agent mode.
func TestCardDecidesOnlyInAgentModeAtCommit(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx := dbtest.Operator()
		var heard []usecase.Decided
		f.answers.OnDecided(func(_ context.Context, d usecase.Decided) { heard = append(heard, d) })

		id := f.drafted("Is prod frozen?", "yes, until Monday")
		if mode, err := orgs.ApprovalMode(ctx, d, "acme"); err != nil || mode != orgs.ApprovalAgent {
			t.Fatalf("the card's door saw mode %q, %v; want agent", mode, err)
		}
		if _, err := f.orgs.SetApprovalMode(ctx, "acme", orgs.ApprovalHuman); err != nil {
			t.Fatal(err)
		}
		for _, dec := range []usecase.Decision{
			{Kind: usecase.Approve, MessageID: id, Version: 1, Door: usecase.Chat},
			{Kind: usecase.Edit, MessageID: id, Version: 1, Text: "yes, until Tuesday", Door: usecase.Chat},
			{Kind: usecase.Answer, MessageID: id, Text: "yes", Door: usecase.Chat},
		} {
			out, err := f.answers.Decide(ctx, acme("john"), dec)
			var refused *inbox.ModeError
			if !errors.As(err, &refused) || ctalk.ErrorCode(err) != ctalk.EForbidden || refused.Mode != orgs.ApprovalHuman {
				t.Fatalf("the card's %s in human mode = %+v, %v; want refused as forbidden by the mode", dec.Kind, out, err)
			}
		}
		r, err := f.in.Review(ctx, acme("john"), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != inbox.StatusPending || r.DraftCount != 1 || r.Latest().Approved {
			t.Fatalf("after the refused card decisions: status %s, %d drafts, latest approved %v; want pending, the agent's draft alone, not approved",
				r.Status, r.DraftCount, r.Latest().Approved)
		}
		if len(heard) != 0 {
			t.Fatalf("heard of %+v after refused decisions", heard)
		}

		out, err := f.answers.Decide(ctx, acme("john"), usecase.Decision{Kind: usecase.Approve, MessageID: id, Version: 1})
		if err != nil || out.Question.Status != inbox.StatusAnswered {
			t.Fatalf("the web app's approval in human mode = %+v, %v; want sent", out, err)
		}

		if _, err := f.orgs.SetApprovalMode(ctx, "acme", orgs.ApprovalAgent); err != nil {
			t.Fatal(err)
		}
		id2 := f.drafted("And staging?", "open")
		out, err = f.answers.Decide(ctx, acme("john"), usecase.Decision{Kind: usecase.Approve, MessageID: id2, Version: 1, Door: usecase.Chat})
		if err != nil || out.Question.Status != inbox.StatusAnswered || out.Question.Answer != "open" {
			t.Fatalf("the card's approval in agent mode = %+v, %v; want sent", out, err)
		}
		if len(heard) != 2 || heard[1].Door != usecase.Chat {
			t.Fatalf("heard %+v; want the web app's and the card's decisions", heard)
		}
	})
}
