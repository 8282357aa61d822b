package inbox_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/wait"
)

// The rules of questions and answers, checked on inbox.Service itself: the
// same rules the MCP tools reach through api.

// rulesOrgs creates orgs acme and other, each with users asker, answerer and
// bystander, and returns a service over d without rate or loop limits.
func rulesOrgs(t *testing.T, d *db.DB) *inbox.Service {
	t.Helper()
	now := d.Now()
	err := d.Tx(dbtest.Operator(), func(tx db.Querier) error {
		for _, org := range []string{"acme", "other"} {
			if _, err := tx.Exec(dbtest.Operator(), `INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ($1, $1, 'x', $2)`, org, now); err != nil {
				return err
			}
			for _, u := range []string{"asker", "answerer", "bystander"} {
				if _, err := tx.Exec(dbtest.Operator(), `INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ($1, $2, $2, 'x', 'member', $3, $3)`, org, u, now); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return newService(d)
}

// askAcme stores a question from asker to answerer in org acme.
func askAcme(t *testing.T, s *inbox.Service, text string) *inbox.Question {
	t.Helper()
	q, err := s.Ask(dbtest.Operator(), acme("asker"), inbox.Ask{To: "answerer", Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// proposeAcme saves a draft in org acme as the answerer and returns it.
func proposeAcme(t *testing.T, s *inbox.Service, id, text string) *inbox.Draft {
	t.Helper()
	d, _, err := s.Propose(dbtest.Operator(), acme("answerer"), id, text)
	if err != nil {
		t.Fatalf("propose %q: %v", text, err)
	}
	return d
}

// wantRefusal checks that err has the given code and its message contains
// want.
func wantRefusal(t *testing.T, what string, err error, code ctalk.Code, want string) {
	t.Helper()
	if got := ctalk.ErrorCode(err); got != code || !strings.Contains(ctalk.ErrorMessage(err), want) {
		t.Errorf("%s: error %v (code %q); want code %q with %q", what, err, got, code, want)
	}
}

// wantNotFound checks that userID of orgID can neither draft, send,
// decline nor withdraw question id, and is told it does not exist.
func wantNotFound(t *testing.T, s *inbox.Service, orgID, userID, id, draft string) {
	t.Helper()
	ctx := dbtest.Operator()
	who := userID + " of " + orgID + " "
	_, _, err := s.Propose(ctx, ctalk.Caller{OrgID: orgID, UserID: userID}, id, draft)
	wantRefusal(t, who+"proposes", err, ctalk.ENotFound, "not found")
	_, err = s.Send(ctx, ctalk.Caller{OrgID: orgID, UserID: userID}, id, draft)
	wantRefusal(t, who+"sends", err, ctalk.ENotFound, "not found")
	_, err = s.Decline(ctx, ctalk.Caller{OrgID: orgID, UserID: userID}, id, "no")
	wantRefusal(t, who+"declines", err, ctalk.ENotFound, "not found")
	_, err = s.Withdraw(ctx, ctalk.Caller{OrgID: orgID, UserID: userID}, id)
	wantRefusal(t, who+"withdraws", err, ctalk.ENotFound, "not found")
}

// storedStatus reads a question's stored status.
func storedStatus(t *testing.T, d *db.DB, id string) string {
	t.Helper()
	var st string
	if err := d.QueryRow(dbtest.Operator(), `SELECT status FROM questions WHERE id = $1`, id).Scan(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestSendOnlyTheExactLatestDraft(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := dbtest.Operator()
		q := askAcme(t, s, "retry logic?")

		_, err := s.Send(ctx, acme("answerer"), q.ID, "three retries")
		wantRefusal(t, "send without a draft", err, ctalk.EConflict, "no proposed draft")
		proposeAcme(t, s, q.ID, "v1")
		proposeAcme(t, s, q.ID, "v2")
		for _, text := range []string{"v1", "v2 edited", "v", ""} {
			_, err := s.Send(ctx, acme("answerer"), q.ID, text)
			wantRefusal(t, "send "+text, err, ctalk.EConflict, "not the latest proposed draft (version 2)")
		}
		if st := storedStatus(t, d, q.ID); st != inbox.StatusPending {
			t.Fatalf("after refused sends the question is %s", st)
		}
		// Surrounding space is not part of the text.
		sent, err := s.Send(ctx, acme("answerer"), q.ID, "  v2\n")
		if err != nil {
			t.Fatal(err)
		}
		if sent.Status != inbox.StatusAnswered || sent.Answer != "v2" || sent.ResolvedBy != "answerer" {
			t.Fatalf("sent = %+v", sent)
		}
		replies, _, err := s.Replies(ctx, acme("asker"), time.Time{}, "", 10)
		if err != nil || len(replies) != 1 || replies[0].Answer != "v2" {
			t.Fatalf("the asker's replies = %v (err %v), want the answer v2", replies, err)
		}
	})
}

func TestHumanModeSendsOnlyTheApprovedLatestDraft(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := dbtest.Operator()
		if _, err := dbtest.Exec(d, `UPDATE orgs SET approval_mode = 'human' WHERE id = 'acme'`); err != nil {
			t.Fatal(err)
		}
		q := askAcme(t, s, "is prod frozen?")
		first := proposeAcme(t, s, q.ID, "v1")
		if first.Approved {
			t.Fatal("a draft in human mode came approved")
		}
		_, err := s.Send(ctx, acme("answerer"), q.ID, "v1")
		wantRefusal(t, "send unapproved", err, ctalk.EForbidden, "not approved yet")
		second := proposeAcme(t, s, q.ID, "v2")
		// The person approves a superseded draft: nothing changes.
		_, err = s.Approve(ctx, acme("answerer"), q.ID, first.Version)
		wantRefusal(t, "approve a superseded draft", err, ctalk.EConflict, "no longer the latest")
		_, err = s.Send(ctx, acme("answerer"), q.ID, "v2")
		wantRefusal(t, "send after approving the older draft", err, ctalk.EForbidden, "not approved yet")
		if _, err := s.Approve(ctx, acme("answerer"), q.ID, second.Version); err != nil {
			t.Fatal(err)
		}
		// The approval sent v2: the agent's send of it sends nothing more.
		_, err = s.Send(ctx, acme("answerer"), q.ID, "v1")
		wantRefusal(t, "send the older text", err, ctalk.EConflict, `already answered, and nothing more can be sent for it; this answer was sent at`)
		if sent, err := s.Send(ctx, acme("answerer"), q.ID, "v2"); err != nil || !sent.Already {
			t.Fatalf("send the approved text = %+v, %v", sent, err)
		}
	})
}

func TestOnlyTheRecipientAnswers(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := dbtest.Operator()
		q := askAcme(t, s, "who owns billing?")
		proposeAcme(t, s, q.ID, "me")

		_, _, err := s.Propose(ctx, acme("asker"), q.ID, "I answer myself")
		wantRefusal(t, "the asker proposes", err, ctalk.EForbidden, "only answerer")
		_, err = s.Send(ctx, acme("asker"), q.ID, "me")
		wantRefusal(t, "the asker sends", err, ctalk.EForbidden, "only answerer")
		_, err = s.Decline(ctx, acme("asker"), q.ID, "no")
		wantRefusal(t, "the asker declines", err, ctalk.EForbidden, "only answerer")
		// Someone who takes no part does not learn the question exists.
		wantNotFound(t, s, "acme", "bystander", q.ID, "me")
		if st := storedStatus(t, d, q.ID); st != inbox.StatusPending {
			t.Fatalf("after refused calls the question is %s", st)
		}
		if _, err := s.Send(ctx, acme("answerer"), q.ID, "me"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestOnlyTheAskerWithdraws(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := dbtest.Operator()
		q := askAcme(t, s, "still needed?")
		_, err := s.Withdraw(ctx, acme("answerer"), q.ID)
		wantRefusal(t, "the recipient withdraws", err, ctalk.EForbidden, "only asker")
		if st := storedStatus(t, d, q.ID); st != inbox.StatusPending {
			t.Fatalf("after a refused withdrawal the question is %s", st)
		}
		w, err := s.Withdraw(ctx, acme("asker"), q.ID)
		if err != nil {
			t.Fatal(err)
		}
		if w.Status != inbox.StatusWithdrawn || w.ResolvedBy != "asker" || storedStatus(t, d, q.ID) != inbox.StatusWithdrawn {
			t.Fatalf("withdrawn = %+v", w)
		}
	})
}

func TestOnlyPendingQuestionsChange(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := dbtest.Operator()
		answered := askAcme(t, s, "a")
		proposeAcme(t, s, answered.ID, "yes")
		if _, err := s.Send(ctx, acme("answerer"), answered.ID, "yes"); err != nil {
			t.Fatal(err)
		}
		declined := askAcme(t, s, "d")
		if _, err := s.Decline(ctx, acme("answerer"), declined.ID, "ask someone else"); err != nil {
			t.Fatal(err)
		}
		withdrawn := askAcme(t, s, "w")
		proposeAcme(t, s, withdrawn.ID, "draft")
		if _, err := s.Withdraw(ctx, acme("asker"), withdrawn.ID); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			q    *inbox.Question
			want string
		}{{answered, inbox.StatusAnswered}, {declined, inbox.StatusDeclined}, {withdrawn, inbox.StatusWithdrawn}} {
			already := "already " + c.want
			_, _, err := s.Propose(ctx, acme("answerer"), c.q.ID, "more")
			wantRefusal(t, "propose to "+c.want, err, ctalk.EConflict, already)
			// The text sent, sent again, is the answered question.
			if sent, err := s.Send(ctx, acme("answerer"), c.q.ID, "yes"); c.want == inbox.StatusAnswered && (err != nil || !sent.Already) {
				t.Errorf("send the answer again = %+v, %v", sent, err)
			} else if c.want != inbox.StatusAnswered {
				wantRefusal(t, "send to "+c.want, err, ctalk.EConflict, already)
			}
			_, err = s.Send(ctx, acme("answerer"), c.q.ID, "draft")
			wantRefusal(t, "send the draft of "+c.want, err, ctalk.EConflict, already)
			_, err = s.Decline(ctx, acme("answerer"), c.q.ID, "no")
			wantRefusal(t, "decline "+c.want, err, ctalk.EConflict, already)
			_, err = s.Withdraw(ctx, acme("asker"), c.q.ID)
			wantRefusal(t, "withdraw "+c.want, err, ctalk.EConflict, already)
			if st := storedStatus(t, d, c.q.ID); st != c.want {
				t.Errorf("question %s is %s after refused calls, want %s", c.q.ID, st, c.want)
			}
		}
	})
}

func TestAskIdempotencyKeys(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := dbtest.Operator()
		in := inbox.Ask{To: "answerer", Text: "deploy window?", IdempotencyKey: "k1"}
		first, err := s.Ask(ctx, acme("asker"), in)
		if err != nil {
			t.Fatal(err)
		}
		again, err := s.Ask(ctx, acme("asker"), in)
		if err != nil || again.ID != first.ID || again.Text != first.Text || !again.CreatedAt.Equal(first.CreatedAt) {
			t.Fatalf("retry = %+v (err %v), want the stored %+v", again, err, first)
		}
		_, err = s.Ask(ctx, acme("asker"), inbox.Ask{To: "answerer", Text: "another question", IdempotencyKey: "k1"})
		wantRefusal(t, "the key for another text", err, ctalk.EConflict, "different question ("+first.ID+")")
		_, err = s.Ask(ctx, acme("asker"), inbox.Ask{To: "bystander", Text: in.Text, IdempotencyKey: "k1"})
		wantRefusal(t, "the key for another recipient", err, ctalk.EConflict, "different question")
		// A key is the asker's own, within the org.
		theirs, err := s.Ask(ctx, acme("bystander"), in)
		if err != nil || theirs.ID == first.ID {
			t.Fatalf("another asker's same key = %+v (err %v), want a question of its own", theirs, err)
		}
		elsewhere, err := s.Ask(ctx, ctalk.Caller{OrgID: "other", UserID: "asker"}, in)
		if err != nil || elsewhere.ID == first.ID {
			t.Fatalf("the same asker id and key in another org = %+v (err %v), want a question of its own", elsewhere, err)
		}
		// Without a key, each ask is a new question.
		a := askAcme(t, s, "same words")
		if b := askAcme(t, s, "same words"); a.ID == b.ID {
			t.Fatal("two asks without a key were stored as one")
		}
		var n int
		if err := d.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM questions WHERE org_id = 'acme' AND asker_id = 'asker'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 3 {
			t.Fatalf("asker stored %d questions in acme, want 3 (one for key k1, two without a key)", n)
		}
	})
}

// TestIdempotentRetryIsNotANewAsk retries an ask with its key, one after
// another and concurrently, and once the asker's rate and the pair's loop
// breaker are exhausted: every retry gets the stored question, none is
// refused, stored or counted in the pair's statistics, and the limits count
// the one question alone.
func TestIdempotentRetryIsNotANewAsk(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		rulesOrgs(t, d)
		ctx := dbtest.Operator()
		limited := func(perMinute, loopMax int) *inbox.Service {
			cfg := inbox.DefaultConfig()
			cfg.AsksPerMinute, cfg.LoopMax = perMinute, loopMax
			return inbox.NewService(d, cfg, wait.NewBroker())
		}
		retry := func(s *inbox.Service, what string, in inbox.Ask, want *inbox.Question) {
			t.Helper()
			got, err := s.Ask(ctx, acme("asker"), in)
			if err != nil || got.ID != want.ID {
				// Errorf: concurrent retries call it from their goroutines.
				t.Errorf("%s: %+v (err %v), want the stored %s", what, got, err, want.ID)
			}
		}

		// The asker may ask 2 questions a minute; the second is sent 8
		// times at once with one key, as a client retrying would: one is
		// stored, and the others get it, not a refusal for the rate it
		// exhausted.
		rate := limited(2, 0)
		if _, err := rate.Ask(ctx, acme("asker"), inbox.Ask{To: "bystander", Text: "first"}); err != nil {
			t.Fatal(err)
		}
		in := inbox.Ask{To: "answerer", Text: "deploy window?", IdempotencyKey: "k-rate"}
		ids := make([]string, 8)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range ids {
			wg.Go(func() {
				<-start
				q, err := rate.Ask(ctx, acme("asker"), in)
				if err != nil {
					t.Errorf("concurrent ask %d with one key: %v, want the one question", i, err)
					return
				}
				ids[i] = q.ID
			})
		}
		close(start)
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		stored := &inbox.Question{ID: ids[0]}
		for _, id := range ids {
			if id != stored.ID {
				t.Fatalf("concurrent asks with one key got different questions: %q", ids)
			}
		}
		for range 3 {
			retry(rate, "a retry at the exhausted rate", in, stored)
		}
		_, err := rate.Ask(ctx, acme("asker"), inbox.Ask{To: "answerer", Text: "third"})
		wantRefusal(t, "the third ask of the minute", err, ctalk.ERateLimited, "retry after")
		c, err := rate.Between(ctx, acme("asker"), "answerer", 10)
		if err != nil || c.YouAsked != 1 || len(c.Recent) != 1 {
			t.Fatalf("after 11 asks of one question: %+v (err %v), want 1 asked, 1 question", c, err)
		}

		loop := limited(0, 2)
		in = inbox.Ask{To: "bystander", Text: "still there?", IdempotencyKey: "k-loop"}
		pairFirst, err := loop.Ask(ctx, acme("asker"), in)
		if err != nil {
			t.Fatal(err)
		}
		retry(loop, "a retry in the pair", in, pairFirst)
		// With "first" above, the pair has exchanged 2 questions, the
		// loop breaker's limit.
		_, err = loop.Ask(ctx, acme("asker"), inbox.Ask{To: "bystander", Text: "and now?"})
		wantRefusal(t, "the pair's third ask", err, ctalk.ERateLimited, "loop")
		retry(loop, "a retry at the exhausted loop breaker", in, pairFirst)
		if c, err := loop.Between(ctx, acme("asker"), "bystander", 10); err != nil || c.YouAsked != 2 || c.TheyAsked != 0 {
			t.Fatalf("between asker and bystander: %+v (err %v), want 2 asked", c, err)
		}
	})
}

func TestQuestionsStayInTheirOrg(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := rulesOrgs(t, d)
		ctx := dbtest.Operator()
		q := askAcme(t, s, "acme's secret")
		proposeAcme(t, s, q.ID, "answer")

		// The same user ids in org other reach none of acme's question.
		wantNotFound(t, s, "other", "answerer", q.ID, "answer")
		wantNotFound(t, s, "other", "asker", q.ID, "answer")
		_, err := s.WaitReply(ctx, ctalk.Caller{OrgID: "other", UserID: "asker"}, q.ID, wait.Options{})
		wantRefusal(t, "wait for a reply from another org", err, ctalk.ENotFound, "not found")
		items, _, err := s.Inbox(ctx, ctalk.Caller{OrgID: "other", UserID: "answerer"}, 10, "")
		if err != nil || len(items) != 0 {
			t.Fatalf("other's inbox = %v (err %v), want empty", items, err)
		}
		got, err := s.WaitInbox(ctx, ctalk.Caller{OrgID: "other", UserID: "answerer"}, wait.Options{}, nil)
		if err != nil || !got.Empty() {
			t.Fatalf("other's wait = %+v (err %v), want nothing", got, err)
		}
		// A user of another org is no recipient.
		if _, err := dbtest.Exec(d, `INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ('other', 'outsider', 'O', 'x', 'member', $1, $1)`, d.Now()); err != nil {
			t.Fatal(err)
		}
		_, err = s.Ask(ctx, acme("asker"), inbox.Ask{To: "outsider", Text: "hi"})
		wantRefusal(t, "ask a user of another org", err, ctalk.ENotFound, "not found in your organization")

		// acme's question is untouched and still acme's answerer's.
		if st := storedStatus(t, d, q.ID); st != inbox.StatusPending {
			t.Fatalf("after calls from another org the question is %s", st)
		}
		items, _, err = s.Inbox(ctx, acme("answerer"), 10, "")
		if err != nil || len(items) != 1 || items[0].ID != q.ID {
			t.Fatalf("acme's inbox = %v (err %v), want the question", items, err)
		}
	})
}
