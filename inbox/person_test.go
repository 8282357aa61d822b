package inbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
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

func TestPersonReadsWithoutTakingFromTheAgent(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := context.Background()
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
		ctx := context.Background()
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

		// Approval takes the rejection back; a rejection takes an approval back.
		if a, err := s.Approve(ctx, acme("answerer"), q.ID, v1.Version); err != nil || !a.Approved || a.Rejected {
			t.Fatalf("approve = %+v, %v", a, err)
		}
		if _, err := s.Reject(ctx, acme("answerer"), q.ID, v1.Version, ""); err != nil {
			t.Fatal(err)
		}
		_, err = s.Send(ctx, acme("answerer"), q.ID, "three retries")
		wantRefusal(t, "send after the approval was taken back", err, ctalk.EForbidden, "rejected draft version 1")

		// An edit is a new version, approved as written, that the agent must send.
		e, err := s.Edit(ctx, acme("answerer"), q.ID, v1.Version, "three retries, exponential backoff")
		if err != nil || e.Version != 2 || !e.Approved || !e.ByPerson {
			t.Fatalf("edit = %+v, %v", e, err)
		}
		_, err = s.Edit(ctx, acme("answerer"), q.ID, v1.Version, "again")
		wantRefusal(t, "edit a superseded version", err, ctalk.EConflict, "no longer the latest: version 2")
		_, err = s.Approve(ctx, acme("answerer"), q.ID, 3)
		wantRefusal(t, "approve a version that does not exist", err, ctalk.ENotFound, "no draft version 3")
		_, err = s.Send(ctx, acme("answerer"), q.ID, "three retries")
		wantRefusal(t, "send the agent's text after the edit", err, ctalk.EConflict, "your person wrote version 2")
		if _, err := s.Send(ctx, acme("answerer"), q.ID, "three retries, exponential backoff"); err != nil {
			t.Fatal(err)
		}
		_, err = s.Approve(ctx, acme("answerer"), q.ID, 2)
		wantRefusal(t, "approve once answered", err, ctalk.EConflict, "already answered")
	})
}

func TestEditWithTheSameTextApproves(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		humanMode(t, d)
		q := askAcme(t, s, "q?")
		v1 := proposeAcme(t, s, q.ID, "yes")
		e, err := s.Edit(context.Background(), acme("answerer"), q.ID, v1.Version, " yes\n")
		if err != nil || e.Version != 1 || !e.Approved || e.ByPerson {
			t.Fatalf("edit without a change = %+v, %v; want version 1 approved", e, err)
		}
		if _, err := s.Send(context.Background(), acme("answerer"), q.ID, "yes"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestOnlyTheRecipientDecides(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := context.Background()
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
		ctx := context.Background()
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
		ctx := context.Background()
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

// TestRejectAgainstTheAgentsSend: the person takes their approval back
// while their agent sends; never do both succeed, since a rejection that
// reports success must have stopped the answer.
func TestRejectAgainstTheAgentsSend(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		humanMode(t, d)
		ctx := context.Background()
		for i := range 20 {
			q := askAcme(t, s, fmt.Sprint("q", i))
			v := proposeAcme(t, s, q.ID, "agent")
			if _, err := s.Approve(ctx, acme("answerer"), q.ID, v.Version); err != nil {
				t.Fatal(err)
			}
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

// TestEditAgainstANewProposal: the person edits version 1 while their agent
// proposes version 2. Both number their versions in turn: the proposal
// always succeeds, and the edit either adds its own version or is told a
// newer draft was written; it never approves over the new proposal.
func TestEditAgainstANewProposal(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := context.Background()
		for i := range 20 {
			q := askAcme(t, s, fmt.Sprint("q", i))
			v1 := proposeAcme(t, s, q.ID, "agent v1")
			var edited, proposed *inbox.Draft
			errEdit, errPropose := race(
				func() (err error) {
					edited, err = s.Edit(ctx, acme("answerer"), q.ID, v1.Version, "person")
					return err
				},
				func() (err error) {
					proposed, _, err = s.Propose(ctx, acme("answerer"), q.ID, "agent v2")
					return err
				})
			if errPropose != nil {
				t.Fatalf("round %d: propose: %v", i, errPropose)
			}
			if errEdit != nil {
				wantRefusal(t, "the edit after a proposal", errEdit, ctalk.EConflict, "no longer the latest")
				continue
			}
			if edited.Version != 2 || proposed.Version != 3 {
				t.Fatalf("round %d: edit got version %d, the proposal %d; want 2 and 3", i, edited.Version, proposed.Version)
			}
		}
	})
}

// TestDecisionsWakeThePerson: each decision wakes the person who made it,
// so that their other open pages show it, and an answer also wakes the
// asker.
func TestDecisionsWakeThePerson(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := context.Background()
		q := askAcme(t, s, "q?")
		proposeAcme(t, s, q.ID, "v1")
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
		_, err := s.Approve(ctx, acme("answerer"), q.ID, 1)
		woken("approve", person, err)
		_, err = s.Reject(ctx, acme("answerer"), q.ID, 1, "no")
		woken("reject", person, err)
		_, err = s.Edit(ctx, acme("answerer"), q.ID, 1, "v2")
		woken("edit", person, err)
		_, err = s.AnswerDirectly(ctx, acme("answerer"), q.ID, "mine")
		woken("answer, the person", person, err)
		woken("answer, the asker", asker, nil)
	})
}
