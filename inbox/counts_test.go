package inbox_test

import (
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/wait"
)

// TestCountsFollowAQuestion: the counts a person's pages show move with a
// question from ask to draft to answer, on both sides, and never count
// another person's questions.
func TestCountsFollowAQuestion(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(d)
		ctx := dbtest.Operator()
		counts := func(user string, want inbox.Counts) {
			t.Helper()
			got, err := s.Counts(ctx, acme(user))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("counts of %s = %+v, want %+v", user, got, want)
			}
		}
		counts("b", inbox.Counts{})
		q, err := s.Ask(ctx, acme("a"), inbox.Ask{To: "b", Text: "retry logic?"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Ask(ctx, acme("a"), inbox.Ask{To: "b", Text: "and the backoff?"}); err != nil {
			t.Fatal(err)
		}
		counts("b", inbox.Counts{Waiting: 2})
		counts("a", inbox.Counts{})
		for _, text := range []string{"three tries", "three tries, then give up"} {
			if _, _, err := s.Propose(ctx, acme("b"), q.ID, text); err != nil {
				t.Fatal(err)
			}
		}
		counts("b", inbox.Counts{Waiting: 2, Drafts: 2})
		if _, err := s.Send(ctx, acme("b"), q.ID, "three tries, then give up"); err != nil {
			t.Fatal(err)
		}
		counts("b", inbox.Counts{Waiting: 1})
		counts("a", inbox.Counts{Replies: 1})
	})
}

// TestRecipientIsWoken: a new draft, an answer and a decline each wake
// the person the question is for, so that their open pages show the change.
func TestRecipientIsWoken(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(d)
		ctx := dbtest.Operator()
		wake, cancel := s.Broker().Subscribe("acme", "b")
		defer cancel()
		woken := func(what string, err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			// Wake is synchronous for this process's subscribers.
			select {
			case <-wake:
			default:
				t.Fatalf("%s did not wake the recipient", what)
			}
		}
		q, err := s.Ask(ctx, acme("a"), inbox.Ask{To: "b", Text: "retry logic?"})
		woken("ask", err)
		_, _, err = s.Propose(ctx, acme("b"), q.ID, "three tries")
		woken("propose", err)
		_, err = s.Send(ctx, acme("b"), q.ID, "three tries")
		woken("send", err)
		q, err = s.Ask(ctx, acme("a"), inbox.Ask{To: "b", Text: "and the backoff?"})
		woken("ask", err)
		_, err = s.Decline(ctx, acme("b"), q.ID, "ask carol")
		woken("decline", err)
	})
}

// TestWatchersAreNotWaitingAgents: an open page watching a person is woken
// like a waiting agent, but not counted as one.
func TestWatchersAreNotWaitingAgents(t *testing.T) {
	t.Parallel()
	b := wait.NewBroker()
	agent, stopAgent := b.Subscribe("acme", "b")
	page, stopPage := b.Watch("acme", "b")
	if got := b.Waiting(); got != 1 {
		t.Fatalf("waiting = %d with one agent and one page, want 1", got)
	}
	b.Wake("acme", "b")
	for name, ch := range map[string]<-chan struct{}{"agent": agent, "page": page} {
		select {
		case <-ch:
		default:
			t.Fatalf("the %s was not woken", name)
		}
	}
	stopPage()
	stopPage()
	if got := b.Waiting(); got != 1 {
		t.Fatalf("waiting = %d after the page left, want 1", got)
	}
	stopAgent()
	if got := b.Waiting(); got != 0 {
		t.Fatalf("waiting = %d after both left, want 0", got)
	}
}
