package inbox_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/wait"
)

func as(org, user string) ctalk.Caller { return ctalk.Caller{OrgID: org, UserID: user} }

func wantCode(t *testing.T, what string, err error, code ctalk.Code) {
	t.Helper()
	if ctalk.ErrorCode(err) != code {
		t.Fatalf("%s: %v; want %s", what, err, code)
	}
}

// TestForwardMovesTheQuestion: b forwards a's question to c with a note; c's
// agent is handed it with the step, b's drafts are gone, b no longer sees
// it, a's waiting agent is handed the news with c as recipient, and
// notifications go to c (question) and a (forwarded).
func TestForwardMovesTheQuestion(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seedOrg(t, d, "acme", "a", "b", "c")
		s := newService(d)
		n := notify.NewService(d, notify.DefaultConfig(), nil)
		s.Notify(n)
		ctx := dbtest.Operator()
		// Each of them can be reached (a webhook): events for nobody are
		// not queued.
		for _, u := range []string{"a", "b", "c"} {
			if _, _, err := n.AddWebhook(ctx, "acme", u, u, "https://hooks.example.net/"+u, notify.FormatJSON); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := n.SaveSettings(ctx, acme("a"), notify.Settings{Channels: map[notify.Kind][]string{notify.KindForwarded: {notify.ChannelWebhook}}}); err != nil {
			t.Fatal(err)
		}
		q, err := s.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, inbox.Ask{To: "b", Text: "who runs billing?"})
		if err != nil {
			t.Fatal(err)
		}
		// The worker has read the question (on SQLite, from its row) before
		// b forwards it.
		if err := n.Expand(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Propose(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, q.ID, "not me"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.WaitReply(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, q.ID, wait.Options{}); err != nil {
			t.Fatal(err)
		}
		got := make(chan []*inbox.Question, 1)
		go func() {
			rs, err := s.WaitReply(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, q.ID, wait.Options{Timeout: 10 * time.Second})
			if err != nil {
				t.Error(err)
			}
			got <- rs
		}()
		waitForWaiters(t, s, 1)
		fq, err := s.Forward(ctx, as("acme", "b"), q.ID, "c", "carol owns billing")
		if err != nil {
			t.Fatal(err)
		}
		if fq.To != "c" || len(fq.Steps) != 1 || fq.Steps[0].Note != "carol owns billing" {
			t.Fatalf("forwarded: %+v", fq)
		}
		rs := <-got
		if len(rs) != 1 || rs[0].To != "c" || rs[0].Status != inbox.StatusPending || len(rs[0].Steps) != 1 || rs[0].Steps[0].Kind != inbox.StepForwarded {
			t.Fatalf("asker's wait was handed %+v; want the question, pending, to c, with its forward", rs)
		}
		items, _, err := s.Inbox(ctx, ctalk.Caller{OrgID: "acme", UserID: "c"}, 10, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 1 || items[0].ID != q.ID || items[0].LatestDraft != nil || len(items[0].Steps) != 1 {
			t.Fatalf("c's inbox: %+v; want the question with its step and no draft of b's", items)
		}
		if _, err := s.Review(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, q.ID); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Fatalf("b reviews the question forwarded away: %v; want not_found", err)
		}
		var kinds []string
		for _, e := range events(t, d, n) {
			kinds = append(kinds, e[0]+":"+e[1])
		}
		slices.Sort(kinds)
		want := []string{"forwarded:a", "question:b", "question:c"}
		if !slices.Equal(kinds, want) {
			t.Fatalf("notifications %v; want %v", kinds, want)
		}
		// Answered by c, a's agent is handed the answer though it was handed the news.
		if _, err := s.AnswerDirectly(ctx, ctalk.Caller{OrgID: "acme", UserID: "c"}, q.ID, "ask Dana"); err != nil {
			t.Fatal(err)
		}
		rs, err = s.WaitReply(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, q.ID, wait.Options{})
		if err != nil || len(rs) != 1 || rs[0].Status != inbox.StatusAnswered {
			t.Fatalf("after the answer: %+v, %v", rs, err)
		}
	})
}

func waitForWaiters(t *testing.T, s *inbox.Service, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.Broker().Waiting() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters; want %d", s.Broker().Waiting(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestForwardRefusesLoops: never back to someone who had it, never to the
// asker, at most MaxForwards times; other orgs' ids and users are not found.
func TestForwardRefusesLoops(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seedOrg(t, d, "acme", "a", "b", "c", "e", "f", "g")
		seedOrg(t, d, "zeta", "z")
		s := newService(d)
		ctx := dbtest.Operator()
		q, err := s.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, inbox.Ask{To: "b", Text: "hot potato"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Forward(ctx, as("acme", "b"), q.ID, "a", "")
		wantCode(t, "forward to the asker", err, ctalk.EInvalid)
		_, err = s.Forward(ctx, as("acme", "b"), q.ID, "z", "")
		wantCode(t, "forward to another org's user", err, ctalk.ENotFound)
		_, err = s.Forward(ctx, as("zeta", "z"), q.ID, "c", "")
		wantCode(t, "another org forwards it", err, ctalk.ENotFound)
		_, err = s.Forward(ctx, as("acme", "a"), q.ID, "c", "")
		wantCode(t, "the asker forwards it", err, ctalk.EForbidden)
		if _, err := s.Forward(ctx, as("acme", "b"), q.ID, "c", ""); err != nil {
			t.Fatal(err)
		}
		_, err = s.Forward(ctx, as("acme", "c"), q.ID, "b", "")
		wantCode(t, "forward back to b", err, ctalk.EConflict)
		for _, hop := range [][2]string{{"c", "e"}, {"e", "f"}} {
			if _, err := s.Forward(ctx, as("acme", hop[0]), q.ID, hop[1], ""); err != nil {
				t.Fatal(err)
			}
		}
		_, err = s.Forward(ctx, as("acme", "f"), q.ID, "g", "")
		wantCode(t, "a fourth forward", err, ctalk.EConflict)
		// Declining and withdrawing still work on it.
		if _, err := s.Withdraw(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, q.ID); err != nil {
			t.Fatal(err)
		}
	})
}

// raceAll runs fns at once and returns their errors.
func raceAll(fns ...func() error) []error {
	errs := make([]error, len(fns))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { <-start; errs[i] = fn() })
	}
	close(start)
	wg.Wait()
	return errs
}

// oneWins checks that exactly one of errs is nil and the others conflicts.
func oneWins(t *testing.T, what string, errs []error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("%s: %d and %d both succeeded", what, winner, i)
		case err == nil:
			winner = i
		case ctalk.ErrorCode(err) != ctalk.EConflict && ctalk.ErrorCode(err) != ctalk.ENotFound && ctalk.ErrorCode(err) != ctalk.EForbidden:
			t.Fatalf("%s: call %d: %v; want a conflict", what, i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("%s: none succeeded: %v", what, errs)
	}
	return winner
}

// TestStepsAreConcurrentSafe: two forwards at once, forward against
// withdraw, an answer against a request for information: exactly one of
// each pair happens, and the question is as the winner left it.
func TestStepsAreConcurrentSafe(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seedOrg(t, d, "acme", "a", "b", "c", "e")
		s := newService(d)
		ctx := dbtest.Operator()
		ask := func() *inbox.Question {
			q, err := s.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, inbox.Ask{To: "b", Text: "race"})
			if err != nil {
				t.Fatal(err)
			}
			return q
		}
		for range 5 {
			q := ask()
			w := oneWins(t, "two forwards", raceAll(
				func() error { _, err := s.Forward(ctx, as("acme", "b"), q.ID, "c", ""); return err },
				func() error { _, err := s.Forward(ctx, as("acme", "b"), q.ID, "e", ""); return err }))
			rs, _, err := s.Asked(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, 1, "")
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"c", "e"}[w]; rs[0].To != want || len(rs[0].Steps) != 1 {
				t.Fatalf("after two forwards: to %s with %d steps; want %s with one", rs[0].To, len(rs[0].Steps), want)
			}

			// A withdrawal always succeeds, after a forward or before it:
			// then the forward is refused, never applied to a withdrawn question.
			q = ask()
			errs := raceAll(
				func() error { _, err := s.Forward(ctx, as("acme", "b"), q.ID, "c", ""); return err },
				func() error { _, err := s.Withdraw(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, q.ID); return err })
			if errs[1] != nil || errs[0] != nil && ctalk.ErrorCode(errs[0]) != ctalk.EConflict && ctalk.ErrorCode(errs[0]) != ctalk.ENotFound {
				t.Fatalf("forward and withdraw: %v", errs)
			}
			rs, _, _ = s.Asked(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, 1, "")
			if want := map[bool]string{true: "c", false: "b"}[errs[0] == nil]; rs[0].Status != inbox.StatusWithdrawn || rs[0].To != want {
				t.Fatalf("after forward (%v) and withdraw: %s to %s; want withdrawn to %s", errs[0], rs[0].Status, rs[0].To, want)
			}

			q = ask()
			w = oneWins(t, "answer and request_info", raceAll(
				func() error {
					_, err := s.AnswerDirectly(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, q.ID, "42")
					return err
				},
				func() error { _, err := s.RequestInfo(ctx, as("acme", "b"), q.ID, "which one?"); return err }))
			rs, _, _ = s.Asked(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, 1, "")
			if want := []string{inbox.StatusAnswered, inbox.StatusNeedsInfo}[w]; rs[0].Status != want {
				t.Fatalf("after answer and request_info: %s; want %s", rs[0].Status, want)
			}
		}
	})
}

// TestNeedsInfoWaitsForTheAsker: b asks a for more; a's waiting agent wakes
// with the request; b can not answer until a provides it; b's agent is
// handed the question again with the exchange.
func TestNeedsInfoWaitsForTheAsker(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seedOrg(t, d, "acme", "a", "b", "c")
		seedOrg(t, d, "zeta", "z")
		s := newService(d)
		ctx := dbtest.Operator()
		q, err := s.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, inbox.Ask{To: "b", Text: "is it safe?"})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Inbox(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, 10, ""); err != nil {
			t.Fatal(err)
		}
		got := make(chan []*inbox.Question, 1)
		go func() {
			rs, err := s.WaitReply(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, "", wait.Options{Timeout: 10 * time.Second})
			if err != nil {
				t.Error(err)
			}
			got <- rs
		}()
		waitForWaiters(t, s, 1)
		_, err = s.RequestInfo(ctx, as("acme", "a"), q.ID, "me?")
		wantCode(t, "the asker requests info", err, ctalk.EForbidden)
		_, err = s.RequestInfo(ctx, as("zeta", "z"), q.ID, "who?")
		wantCode(t, "another org requests info", err, ctalk.ENotFound)
		if _, err := s.RequestInfo(ctx, as("acme", "b"), q.ID, "which release?"); err != nil {
			t.Fatal(err)
		}
		rs := <-got
		if len(rs) != 1 || rs[0].Status != inbox.StatusNeedsInfo || rs[0].InfoRequest != "which release?" {
			t.Fatalf("asker's wait was handed %+v; want the request", rs)
		}
		_, err = s.AnswerDirectly(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, q.ID, "yes")
		wantCode(t, "answer while waiting for info", err, ctalk.EConflict)
		_, err = s.Forward(ctx, as("acme", "b"), q.ID, "c", "")
		wantCode(t, "forward while waiting for info", err, ctalk.EConflict)
		_, err = s.ProvideInfo(ctx, as("acme", "b"), q.ID, "2.0")
		wantCode(t, "the recipient provides info", err, ctalk.EForbidden)
		if _, err := s.ProvideInfo(ctx, as("acme", "a"), q.ID, "release 2.0"); err != nil {
			t.Fatal(err)
		}
		_, err = s.ProvideInfo(ctx, as("acme", "a"), q.ID, "again")
		wantCode(t, "provide info twice", err, ctalk.EConflict)
		items, _, err := s.Inbox(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, 10, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 1 || items[0].Status != inbox.StatusPending || len(items[0].Steps) != 2 || items[0].Steps[1].Note != "release 2.0" {
			t.Fatalf("b's agent is handed %+v; want the question again with the exchange", items)
		}
		if _, err := s.AnswerDirectly(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, q.ID, "yes"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestFollowUpsMakeAThread: a follows up an answered question, the
// follow-up goes to who answered, carries the thread, needs its own
// approved answer; a pending or foreign question cannot be followed up.
func TestFollowUpsMakeAThread(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seedOrg(t, d, "acme", "a", "b", "c")
		seedOrg(t, d, "zeta", "z")
		s := newService(d)
		ctx := dbtest.Operator()
		if _, err := dbtest.Exec(d, `UPDATE orgs SET approval_mode = 'human' WHERE id = 'acme'`); err != nil {
			t.Fatal(err)
		}
		q1, err := s.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, inbox.Ask{To: "b", Text: "deploy day?"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, inbox.Ask{To: "b", Text: "and time?", FollowUpOf: q1.ID})
		wantCode(t, "follow up a pending question", err, ctalk.EConflict)
		if _, err := s.AnswerDirectly(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, q1.ID, "Tuesday"); err != nil {
			t.Fatal(err)
		}
		_, err = s.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, inbox.Ask{To: "c", Text: "and time?", FollowUpOf: q1.ID})
		wantCode(t, "follow up to someone else", err, ctalk.EInvalid)
		_, err = s.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, inbox.Ask{To: "a", Text: "and you?", FollowUpOf: q1.ID})
		wantCode(t, "the answerer follows up", err, ctalk.EForbidden)
		_, err = s.Ask(ctx, ctalk.Caller{OrgID: "zeta", UserID: "z"}, inbox.Ask{To: "z", Text: "x", FollowUpOf: q1.ID})
		if code := ctalk.ErrorCode(err); code != ctalk.ENotFound && code != ctalk.EInvalid {
			t.Fatalf("another org follows up: %v", err)
		}
		q2, err := s.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, inbox.Ask{To: "b", Text: "and time?", FollowUpOf: q1.ID})
		if err != nil {
			t.Fatal(err)
		}
		q3 := func() *inbox.Question {
			if _, err := s.AnswerDirectly(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, q2.ID, "9am"); err != nil {
				t.Fatal(err)
			}
			q, err := s.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, inbox.Ask{To: "b", Text: "UTC?", FollowUpOf: q2.ID})
			if err != nil {
				t.Fatal(err)
			}
			return q
		}()
		items, _, err := s.Inbox(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, 10, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 1 || items[0].ThreadID != q1.ID || len(items[0].Thread) != 2 ||
			items[0].Thread[0].Answer != "Tuesday" || items[0].Thread[1].Answer != "9am" {
			t.Fatalf("the follow-up in b's inbox: %+v; want the thread of two answers", items[0])
		}
		// Approval applies to the follow-up's answer as to any: no approved draft, no send.
		if _, _, err := s.Propose(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, q3.ID, "yes"); err != nil {
			t.Fatal(err)
		}
		_, err = s.Send(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, q3.ID, "yes")
		wantCode(t, "send an unapproved follow-up answer", err, ctalk.EForbidden)
		rs, err := s.WaitReply(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, "", wait.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.ID == q2.ID && len(r.Thread) != 1 {
				t.Fatalf("the follow-up's answer handed to a: %+v; want its thread", r)
			}
		}
	})
}

// TestAskUnlessAwayRefusesAnAwayRecipient: with UnlessAway, a question to
// a person away is refused with their status and nothing is stored, on
// both ways an ask is stored (with notifications and without); without it,
// or once they are back, it is asked; a retry with the key of a question
// asked before they left gets that question.
func TestAskUnlessAwayRefusesAnAwayRecipient(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seedOrg(t, d, "acme", "a", "b")
		ctx := dbtest.Operator()
		plain, notified := newService(d), newService(d)
		notified.Notify(notify.NewService(d, notify.DefaultConfig(), nil))
		before, err := plain.Ask(ctx, as("acme", "a"), inbox.Ask{To: "b", Text: "before you leave?", IdempotencyKey: "k0", UnlessAway: true})
		if err != nil {
			t.Fatal(err)
		}
		setAway := func(until any) {
			t.Helper()
			err := d.Write(ctx, func(q db.Querier) error {
				_, err := q.Exec(ctx, `UPDATE users SET away_until = $1, away_delegate = 'a', away_note = 'offsite' WHERE org_id = 'acme' AND id = 'b'`, until)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		setAway(d.Now().Add(time.Hour))
		for name, s := range map[string]*inbox.Service{"plain": plain, "notified": notified} {
			_, err := s.Ask(ctx, as("acme", "a"), inbox.Ask{To: "b", Text: "where is the runbook?", IdempotencyKey: "k-" + name, UnlessAway: true})
			var away *inbox.AwayError
			if !errors.As(err, &away) || away.To != "b" || away.Away.Delegate != "a" || away.Away.Note != "offsite" || !away.Away.Until.After(d.Now()) {
				t.Fatalf("%s: ask of an away person = %v; want *AwayError with their status", name, err)
			}
			wantCode(t, name+": away", err, ctalk.EConflict)
			retry, err := s.Ask(ctx, as("acme", "a"), inbox.Ask{To: "b", Text: "before you leave?", IdempotencyKey: "k0", UnlessAway: true})
			if err != nil || retry.ID != before.ID {
				t.Fatalf("%s: retry of a question asked before = %v, %v; want %s", name, retry, err, before.ID)
			}
		}
		if items, _, err := plain.Asked(ctx, as("acme", "a"), 10, ""); err != nil || len(items) != 1 {
			t.Fatalf("questions stored = %d, %v; want only the one asked before", len(items), err)
		}
		if _, err := plain.Ask(ctx, as("acme", "a"), inbox.Ask{To: "b", Text: "asked anyway"}); err != nil {
			t.Fatalf("ask without UnlessAway: %v", err)
		}
		setAway(nil)
		if _, err := notified.Ask(ctx, as("acme", "a"), inbox.Ask{To: "b", Text: "back?", UnlessAway: true}); err != nil {
			t.Fatalf("ask once back: %v", err)
		}
		_, err = plain.Ask(ctx, as("acme", "a"), inbox.Ask{To: "nobody", Text: "hello?", UnlessAway: true})
		wantCode(t, "unknown recipient", err, ctalk.ENotFound)
	})
}
