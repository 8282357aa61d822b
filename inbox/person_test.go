package inbox_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/wait"
)

// What a person does in the web app, checked on inbox.Service.

// humanMode sets org acme's approval mode to human.
func humanMode(t *testing.T, d *db.DB) {
	t.Helper()
	if _, err := dbtest.Exec(d, `UPDATE orgs SET approval_mode = 'human' WHERE id = 'acme'`); err != nil {
		t.Fatal(err)
	}
}

// eachMode runs fn on both engines in both approval modes, with org acme
// in mode.
func eachMode(t *testing.T, fn func(t *testing.T, d *db.DB, s *inbox.Service, mode string)) {
	for _, mode := range []string{orgs.ApprovalAgent, orgs.ApprovalHuman} {
		t.Run(mode, func(t *testing.T) {
			dbtest.Run(t, func(t *testing.T, d *db.DB) {
				s := rulesOrgs(t, d)
				if _, err := dbtest.Exec(d, `UPDATE orgs SET approval_mode = $1 WHERE id = 'acme'`, mode); err != nil {
					t.Fatal(err)
				}
				fn(t, d, s, mode)
			})
		})
	}
}

func TestPersonReadsWithoutTakingFromTheAgent(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := dbtest.Operator()
		first := askAcme(t, s, "first?")
		second := askAcme(t, s, "second?")
		for i := range 7 {
			proposeAcme(t, s, first.ID, fmt.Sprint("v", i+1))
		}
		page, next, err := s.Pending(ctx, acme("answerer"), 1, "")
		if err != nil || len(page) != 1 || next == "" {
			t.Fatalf("first page = %v, next %q, err %v", page, next, err)
		}
		r := page[0]
		if r.ID != first.ID || r.Sender.UserID != "asker" || r.History.TheyAsked != 2 || r.DraftCount != 7 ||
			len(r.Drafts) != inbox.ListedDrafts || r.Latest().Text != "v7" || r.Drafts[inbox.ListedDrafts-1].Version != 3 {
			t.Fatalf("first page's review = %+v, drafts %v", r, r.Drafts)
		}
		page, next, err = s.Pending(ctx, acme("answerer"), 1, next)
		if err != nil || len(page) != 1 || next != "" || page[0].ID != second.ID || page[0].Latest() != nil {
			t.Fatalf("second page = %v, next %q, err %v", page, next, err)
		}
		full, err := s.Review(ctx, acme("answerer"), first.ID)
		if err != nil || len(full.Drafts) != 7 || full.Drafts[6].Version != 1 {
			t.Fatalf("review = %+v, err %v", full, err)
		}
		// The agent is still handed both questions.
		got, err := s.WaitInbox(ctx, acme("answerer"), wait.Options{Timeout: time.Millisecond}, nil)
		if err != nil || len(got.Questions) != 2 {
			t.Fatalf("the agent was handed %v (err %v) after the person looked; want both questions", got, err)
		}
		// Only the recipient reviews: not the asker, a bystander or another org.
		for _, who := range [][2]string{{"acme", "asker"}, {"acme", "bystander"}, {"other", "answerer"}} {
			_, err := s.Review(ctx, ctalk.Caller{OrgID: who[0], UserID: who[1]}, first.ID)
			wantRefusal(t, who[1]+" of "+who[0]+" reviews", err, ctalk.ENotFound, "not")
		}
	})
}

func TestPersonApprovesRejectsAndEdits(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		humanMode(t, d)
		ctx := dbtest.Operator()
		q := askAcme(t, s, "retry logic?")
		v1 := proposeAcme(t, s, q.ID, "three retries")

		// Rejected with a note: the agent reads it in its inbox and in the refusal.
		if _, err := s.Reject(ctx, acme("answerer"), q.ID, v1.Version, "say which backoff"); err != nil {
			t.Fatal(err)
		}
		items, _, err := s.Inbox(ctx, acme("answerer"), 10, "")
		if err != nil || items[0].LatestDraft == nil || !items[0].LatestDraft.Rejected || items[0].LatestDraft.Note != "say which backoff" {
			t.Fatalf("the agent's inbox = %+v (err %v), want the rejected draft with its note", items[0].LatestDraft, err)
		}
		_, err = s.Send(ctx, acme("answerer"), q.ID, "three retries")
		wantRefusal(t, "send a rejected draft", err, ctalk.EForbidden, `"say which backoff"`)

		// Approval takes the rejection back and sends the draft.
		a, err := s.Approve(ctx, acme("answerer"), q.ID, v1.Version)
		if err != nil || a.Already || a.Status != inbox.StatusAnswered || a.Answer != "three retries" || !a.Draft.Approved || a.Draft.Rejected || a.Draft.Version != 1 {
			t.Fatalf("approve = %+v, draft %+v, %v", a, a.Draft, err)
		}
		_, err = s.Reject(ctx, acme("answerer"), q.ID, v1.Version, "")
		wantRefusal(t, "reject once sent", err, ctalk.EConflict, `already answered, and nothing more can be sent for it; this answer was sent at`)
		wantRefusal(t, "reject once sent", err, ctalk.EConflict, `"three retries"`)

		// Stale versions are refused while the question waits.
		q2 := askAcme(t, s, "backoff?")
		v1 = proposeAcme(t, s, q2.ID, "three retries")
		proposeAcme(t, s, q2.ID, "three retries, doubling")
		_, err = s.Edit(ctx, acme("answerer"), q2.ID, v1.Version, "again")
		wantRefusal(t, "edit a superseded version", err, ctalk.EConflict, "no longer the latest: version 2")
		_, err = s.Approve(ctx, acme("answerer"), q2.ID, 3)
		wantRefusal(t, "approve a version that does not exist", err, ctalk.ENotFound, "no draft version 3")

		// An edit is a new version, approved as written, sent at once.
		e, err := s.Edit(ctx, acme("answerer"), q2.ID, 2, "three retries, exponential backoff")
		if err != nil || e.Already || e.Draft.Version != 3 || !e.Draft.Approved || !e.Draft.ByPerson || e.Answer != "three retries, exponential backoff" {
			t.Fatalf("edit = %+v, draft %+v, %v", e, e.Draft, err)
		}
		r, err := s.Review(ctx, acme("answerer"), q2.ID)
		if err != nil || r.Status != inbox.StatusAnswered || r.DraftCount != 3 || r.Latest().Text != "three retries, exponential backoff" {
			t.Fatalf("review after the edit = %+v, %v", r, err)
		}
		_, err = s.Approve(ctx, acme("answerer"), q2.ID, 2)
		wantRefusal(t, "approve the agent's version once the edit was sent", err, ctalk.EConflict, `"three retries, exponential backoff"`)
	})
}

// TestTheAgentsSendAfterItsPersonsDecision: once the person's approval or
// edit sent the answer, the agent's send_response of the same text gets the
// answered question and sends nothing; any other text is a conflict that
// quotes what was sent. Approving or editing again with the text sent
// changes nothing either. In both approval modes.
func TestTheAgentsSendAfterItsPersonsDecision(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, _ *db.DB, s *inbox.Service, mode string) {
		ctx := dbtest.Operator()
		approved := askAcme(t, s, mode+": retry logic?")
		proposeAcme(t, s, approved.ID, "three retries")
		first, err := s.Approve(ctx, acme("answerer"), approved.ID, 1)
		if err != nil || first.Already {
			t.Fatalf("%s: approve = %+v, %v", mode, first, err)
		}
		again, err := s.Send(ctx, acme("answerer"), approved.ID, " three retries\n")
		if err != nil || !again.Already || again.Status != inbox.StatusAnswered || again.Answer != "three retries" || !again.ResolvedAt.Equal(*first.ResolvedAt) {
			t.Fatalf("%s: the agent's send after the approval = %+v, %v; want the answered question, sent once", mode, again, err)
		}
		if twice, err := s.Approve(ctx, acme("answerer"), approved.ID, 1); err != nil || !twice.Already {
			t.Fatalf("%s: a second approval = %+v, %v", mode, twice, err)
		}
		_, err = s.Send(ctx, acme("answerer"), approved.ID, "four retries")
		wantRefusal(t, mode+": the agent sends other text", err, ctalk.EConflict, `"three retries"`)

		edited := askAcme(t, s, mode+": backoff?")
		proposeAcme(t, s, edited.ID, "doubling")
		if _, err := s.Edit(ctx, acme("answerer"), edited.ID, 1, "doubling, capped at a minute"); err != nil {
			t.Fatal(err)
		}
		_, err = s.Send(ctx, acme("answerer"), edited.ID, "doubling")
		wantRefusal(t, mode+": the agent sends its draft after the person's edit", err, ctalk.EConflict, `"doubling, capped at a minute"`)
		if again, err := s.Edit(ctx, acme("answerer"), edited.ID, 1, "doubling, capped at a minute"); err != nil || !again.Already {
			t.Fatalf("%s: the same edit again = %+v, %v", mode, again, err)
		}
		if again, err := s.Send(ctx, acme("answerer"), edited.ID, "doubling, capped at a minute"); err != nil || !again.Already {
			t.Fatalf("%s: the agent sends the person's version = %+v, %v", mode, again, err)
		}

		// The asker is handed each answer once.
		replies, err := s.WaitReply(ctx, acme("asker"), "", wait.Options{Timeout: time.Millisecond})
		if err != nil || len(replies) != 2 || replies[0].Answer != "three retries" || replies[1].Answer != "doubling, capped at a minute" {
			t.Fatalf("%s: the asker got %v (err %v)", mode, replies, err)
		}
	})
}

func TestEditWithTheSameTextApproves(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		humanMode(t, d)
		q := askAcme(t, s, "q?")
		v1 := proposeAcme(t, s, q.ID, "yes")
		e, err := s.Edit(dbtest.Operator(), acme("answerer"), q.ID, v1.Version, " yes\n")
		if err != nil || e.Draft.Version != 1 || !e.Draft.Approved || e.Draft.ByPerson || e.Answer != "yes" {
			t.Fatalf("edit without a change = %+v, %v; want version 1 approved and sent", e, err)
		}
		if again, err := s.Send(dbtest.Operator(), acme("answerer"), q.ID, "yes"); err != nil || !again.Already {
			t.Fatalf("the agent's send = %+v, %v", again, err)
		}
	})
}

func TestOnlyTheRecipientDecides(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := dbtest.Operator()
		q := askAcme(t, s, "q?")
		v1 := proposeAcme(t, s, q.ID, "yes")
		for _, c := range []struct {
			org, user string
			code      ctalk.Code
		}{{"acme", "asker", ctalk.EForbidden}, {"acme", "bystander", ctalk.ENotFound}, {"other", "answerer", ctalk.ENotFound}} {
			who := c.user + " of " + c.org + " "
			_, err := s.Approve(ctx, ctalk.Caller{OrgID: c.org, UserID: c.user}, q.ID, v1.Version)
			wantRefusal(t, who+"approves", err, c.code, "")
			_, err = s.Reject(ctx, ctalk.Caller{OrgID: c.org, UserID: c.user}, q.ID, v1.Version, "no")
			wantRefusal(t, who+"rejects", err, c.code, "")
			_, err = s.Edit(ctx, ctalk.Caller{OrgID: c.org, UserID: c.user}, q.ID, v1.Version, "no")
			wantRefusal(t, who+"edits", err, c.code, "")
			_, err = s.AnswerDirectly(ctx, ctalk.Caller{OrgID: c.org, UserID: c.user}, q.ID, "no")
			wantRefusal(t, who+"answers", err, c.code, "")
		}
		r, err := s.Review(ctx, acme("answerer"), q.ID)
		if err != nil || r.Status != inbox.StatusPending || r.DraftCount != 1 || r.Latest().Approved || r.Latest().Rejected {
			t.Fatalf("after refused decisions: %+v %+v, %v", r, r.Latest(), err)
		}
	})
}

func TestAnswerDirectly(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		humanMode(t, d)
		ctx := dbtest.Operator()
		q := askAcme(t, s, "who owns billing?")
		proposeAcme(t, s, q.ID, "an agent's draft")
		a, err := s.AnswerDirectly(ctx, acme("answerer"), q.ID, "  I do.\n")
		if err != nil || a.Status != inbox.StatusAnswered || a.Answer != "I do." {
			t.Fatalf("answer = %+v, %v", a, err)
		}
		replies, err := s.WaitReply(ctx, acme("asker"), q.ID, wait.Options{Timeout: time.Millisecond})
		if err != nil || len(replies) != 1 || replies[0].Answer != "I do." {
			t.Fatalf("the asker got %v (err %v)", replies, err)
		}
		r, err := s.Review(ctx, acme("answerer"), q.ID)
		if err != nil || r.Status != inbox.StatusAnswered || r.Latest().Text != "I do." || !r.Latest().ByPerson {
			t.Fatalf("review after answering = %+v %+v, %v", r, r.Latest(), err)
		}
		_, err = s.AnswerDirectly(ctx, acme("answerer"), q.ID, "twice")
		wantRefusal(t, "answer twice", err, ctalk.EConflict, "already answered")
	})
}

// race runs a and b at once and returns their errors.
func race(a, b func() error) (errA, errB error) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	wg.Go(func() { <-start; errA = a() })
	wg.Go(func() { <-start; errB = b() })
	close(start)
	wg.Wait()
	return errA, errB
}

// TestAnswerDirectlyAgainstTheAgentsSend: the person answers while their
// agent sends the approved draft; exactly one answer is sent, and it is the
// one the asker receives.
func TestAnswerDirectlyAgainstTheAgentsSend(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := dbtest.Operator()
		for i := range 20 {
			q := askAcme(t, s, fmt.Sprint("q", i))
			proposeAcme(t, s, q.ID, "agent")
			errPerson, errAgent := race(
				func() error {
					_, err := s.AnswerDirectly(ctx, acme("answerer"), q.ID, "person")
					return err
				},
				func() error {
					_, err := s.Send(ctx, acme("answerer"), q.ID, "agent")
					return err
				})
			if (errPerson == nil) == (errAgent == nil) {
				t.Fatalf("round %d: person %v, agent %v; want exactly one answer", i, errPerson, errAgent)
			}
			want, loser := "person", errAgent
			if errPerson != nil {
				want, loser = "agent", errPerson
			}
			wantRefusal(t, "the second answer", loser, ctalk.EConflict, "answered")
			r, err := s.Review(ctx, acme("answerer"), q.ID)
			if err != nil || r.Answer != want {
				t.Fatalf("round %d: stored answer %q (err %v), want %q", i, r.Answer, err, want)
			}
		}
	})
}

// TestRejectAgainstTheAgentsSend: the person rejects the draft while their
// agent sends it; never do both succeed, since a rejection that reports
// success must have stopped the answer.
func TestRejectAgainstTheAgentsSend(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := dbtest.Operator()
		for i := range 20 {
			q := askAcme(t, s, fmt.Sprint("q", i))
			v := proposeAcme(t, s, q.ID, "agent")
			errReject, errSend := race(
				func() error {
					_, err := s.Reject(ctx, acme("answerer"), q.ID, v.Version, "stop")
					return err
				},
				func() error {
					_, err := s.Send(ctx, acme("answerer"), q.ID, "agent")
					return err
				})
			if (errReject == nil) == (errSend == nil) {
				t.Fatalf("round %d: reject %v, send %v; want exactly one to succeed", i, errReject, errSend)
			}
			if errSend == nil && storedStatus(t, d, q.ID) != inbox.StatusAnswered || errReject == nil && storedStatus(t, d, q.ID) != inbox.StatusPending {
				t.Fatalf("round %d: reject %v, send %v, stored %s", i, errReject, errSend, storedStatus(t, d, q.ID))
			}
		}
	})
}

// TestEditAgainstANewProposal: the person edits version 1, which sends
// their text, while their agent proposes version 2. They take turns on the
// question: either the edit adds version 2 and sends it, and the proposal
// finds the question answered, or the proposal comes first and the edit is
// told a newer draft was written. The edit never sends over a proposal it
// did not see.
func TestEditAgainstANewProposal(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := dbtest.Operator()
		for i := range 20 {
			q := askAcme(t, s, fmt.Sprint("q", i))
			v1 := proposeAcme(t, s, q.ID, "agent v1")
			var edited *inbox.Sent
			errEdit, errPropose := race(
				func() (err error) {
					edited, err = s.Edit(ctx, acme("answerer"), q.ID, v1.Version, "person")
					return err
				},
				func() (err error) {
					_, _, err = s.Propose(ctx, acme("answerer"), q.ID, "agent v2")
					return err
				})
			if (errEdit == nil) == (errPropose == nil) {
				t.Fatalf("round %d: edit %v, propose %v; want exactly one to succeed", i, errEdit, errPropose)
			}
			if errEdit != nil {
				wantRefusal(t, "the edit after a proposal", errEdit, ctalk.EConflict, "no longer the latest")
				continue
			}
			wantRefusal(t, "the proposal after the edit", errPropose, ctalk.EConflict, "already answered")
			if edited.Draft.Version != 2 || edited.Answer != "person" {
				t.Fatalf("round %d: the edit = %+v, draft %+v; want version 2 sent", i, edited, edited.Draft)
			}
		}
	})
}

// TestDecisionsWakeThePerson: each decision wakes the person who made it,
// so that their other open pages show it, and one that sends the answer
// also wakes the asker.
func TestDecisionsWakeThePerson(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := dbtest.Operator()
		person, cancel := s.Broker().Subscribe("acme", "answerer")
		defer cancel()
		asker, cancelAsker := s.Broker().Subscribe("acme", "asker")
		defer cancelAsker()
		woken := func(what string, wake <-chan struct{}, err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			// Wake is synchronous for this process's subscribers.
			select {
			case <-wake:
			default:
				t.Fatalf("%s did not wake", what)
			}
		}
		// A question, with a draft proposed; the wake-ups of both are read.
		question := func() string {
			q := askAcme(t, s, "q?")
			proposeAcme(t, s, q.ID, "v1")
			woken("the ask", person, nil)
			return q.ID
		}
		id := question()
		_, err := s.Reject(ctx, acme("answerer"), id, 1, "no")
		woken("reject", person, err)
		_, err = s.Approve(ctx, acme("answerer"), id, 1)
		woken("approve, the person", person, err)
		woken("approve, the asker", asker, nil)
		id = question()
		_, err = s.Edit(ctx, acme("answerer"), id, 1, "v2")
		woken("edit, the person", person, err)
		woken("edit, the asker", asker, nil)
		id = question()
		_, err = s.AnswerDirectly(ctx, acme("answerer"), id, "mine")
		woken("answer, the person", person, err)
		woken("answer, the asker", asker, nil)
	})
}
