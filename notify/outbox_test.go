package notify_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/wait"
)

// outboxAsker is an inbox over d that notifies through n (none when nil),
// with limits no test here reaches.
func outboxAsker(d *db.DB, n *notify.Service) *inbox.Service {
	cfg := inbox.DefaultConfig()
	cfg.AsksPerMinute, cfg.LoopMax = 1<<30, 1<<30
	s := inbox.NewService(d, cfg, wait.NewBroker())
	if n != nil {
		s.Notify(n)
	}
	return s
}

func askB(t *testing.T, s *inbox.Service, text string) *inbox.Question {
	t.Helper()
	q, err := s.Ask(context.Background(), ctalk.Caller{OrgID: "acme", UserID: "a"}, inbox.Ask{To: "b", Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// outboxWorld is a seeded SQLite database and a worker over it, for
// which b of acme added the returned receiver as a webhook.
func outboxWorld(t *testing.T) (*db.DB, *notify.Service, *receiver) {
	t.Helper()
	d := dbtest.Open(t, db.SQLite)
	seed(t, d)
	n := newService(t, d, nil)
	return d, n, hookedReceiver(t, n)
}

// expandOnce runs n's Expand: the worker reads the outbox once.
func expandOnce(t *testing.T, n *notify.Service) {
	t.Helper()
	if err := n.Expand(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// questionEvents counts the question events of subject, expanded or not.
func questionEvents(t *testing.T, d *db.DB, subject string) int {
	t.Helper()
	return count(t, d, `SELECT COUNT(*) FROM notify_events WHERE kind = 'question' AND subject = $1`, subject)
}

// TestOutboxNotifiesEachQuestionOnce asks 200 questions from four
// goroutines on one SQLite file while the workers of two processes' pools
// over it read the questions' outbox at the same time: each question has
// one event and one delivery, however the two workers' reads overlapped.
// On Postgres an ask writes its event with the question (see
// TestChangesQueueTheirNotifications in inbox).
func TestOutboxNotifiesEachQuestionOnce(t *testing.T) {
	dbs, workers := twoReplicasOn(t, db.SQLite, func(*notify.Config) {})
	hookedReceiver(t, workers[0])
	asker := outboxAsker(dbs[0], workers[0])
	ctx := context.Background()
	const askers, each = 4, 50
	var asking, reading sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, askers+len(workers))
	for i := range askers {
		asking.Go(func() {
			for j := range each {
				if _, err := asker.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, inbox.Ask{To: "b", Text: fmt.Sprintf("question %d of %d", j, i)}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for _, w := range workers {
		reading.Go(func() {
			for {
				select {
				case <-done:
					errs <- w.Expand(ctx)
					return
				default:
				}
				if err := w.Expand(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	asking.Wait()
	close(done)
	reading.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	d := dbs[0]
	if n := count(t, d, `SELECT COUNT(*) FROM questions`); n != askers*each {
		t.Fatalf("%d questions, want %d", n, askers*each)
	}
	if n := count(t, d, `SELECT COUNT(DISTINCT subject) FROM notify_events WHERE kind = 'question'`); n != askers*each {
		t.Fatalf("%d questions with an event, want %d", n, askers*each)
	}
	if n := count(t, d, `SELECT COUNT(*) FROM notify_events WHERE kind = 'question'`); n != askers*each {
		t.Fatalf("%d question events, want one for each of %d questions", n, askers*each)
	}
	if n := count(t, d, `SELECT COUNT(*) FROM notify_deliveries`); n != askers*each {
		t.Fatalf("%d deliveries, want one for each of %d questions", n, askers*each)
	}
	if n := count(t, d, `SELECT COUNT(*) FROM notify_events WHERE expanded_at IS NULL`); n != 0 {
		t.Fatalf("%d events left to expand, want none: the outbox stores them expanded", n)
	}
}

// TestOutboxSkipsWhatItNeedNotTell: a question asked while notifications
// were off, one resolved and one forwarded before the worker read them
// have no event of their own; a question asked with them on has one.
func TestOutboxSkipsWhatItNeedNotTell(t *testing.T) {
	d, n, r := outboxWorld(t)
	if _, err := dbtest.Exec(d, `INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ('acme', 'c', 'c', 'x', 'member', $1, $1)`, d.Now()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := n.AddWebhook(ctx, "acme", "c", "c", r.URL, notify.FormatJSON); err != nil {
		t.Fatal(err)
	}
	off := askB(t, outboxAsker(d, nil), "asked with notifications off")
	on := outboxAsker(d, n)
	withdrawn := askB(t, on, "withdrawn at once")
	if _, err := on.Withdraw(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, withdrawn.ID); err != nil {
		t.Fatal(err)
	}
	forwarded := askB(t, on, "forwarded at once")
	if _, err := on.Forward(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, forwarded.ID, "c", ""); err != nil {
		t.Fatal(err)
	}
	asked := askB(t, on, "waits for b")
	expandOnce(t, n)
	for _, q := range []*inbox.Question{off, withdrawn} {
		if n := questionEvents(t, d, q.ID); n != 0 {
			t.Errorf("%q has %d question events, want none", q.Text, n)
		}
	}
	if n := count(t, d, `SELECT COUNT(*) FROM notify_events WHERE kind = 'question' AND subject = $1 AND user_id = 'c'`, forwarded.ID); n != 1 {
		t.Errorf("the forwarded question has %d question events for c, want the forward's one", n)
	}
	if n := count(t, d, `SELECT COUNT(*) FROM notify_events WHERE kind = 'question' AND subject = $1 AND user_id = 'b'`, forwarded.ID); n != 0 {
		t.Errorf("the forwarded question has %d question events for b, who no longer has it; want none", n)
	}
	if n := questionEvents(t, d, asked.ID); n != 1 {
		t.Errorf("the question asked with notifications on has %d events, want 1", n)
	}
}

// TestOutboxCursorStepsBackOverDeletedQuestions deletes the newest
// question once the worker has read it: SQLite gives the next question
// the rowid the deleted one had, which the cursor had passed, so the
// cursor steps back, and the next question is notified.
func TestOutboxCursorStepsBackOverDeletedQuestions(t *testing.T) {
	d, n, _ := outboxWorld(t)
	on := outboxAsker(d, n)
	first := askB(t, on, "first")
	expandOnce(t, n)
	if n := questionEvents(t, d, first.ID); n != 1 {
		t.Fatalf("the first question has %d events, want 1", n)
	}
	if _, err := dbtest.Exec(d, `DELETE FROM questions WHERE id = $1`, first.ID); err != nil {
		t.Fatal(err)
	}
	second := askB(t, on, "second")
	expandOnce(t, n)
	if n := questionEvents(t, d, second.ID); n != 1 {
		t.Fatalf("the question asked after the newest was deleted has %d events, want 1", n)
	}
}

// TestOutboxStepDownKeepsUnreadQuestions reverts SQLite's outbox step with a
// question the worker has not read: it becomes an event not yet expanded,
// as an ask queued it before the step, and nothing is lost.
func TestOutboxStepDownKeepsUnreadQuestions(t *testing.T) {
	d, n, _ := outboxWorld(t)
	read := askB(t, outboxAsker(d, n), "read by the worker")
	expandOnce(t, n)
	unread := askB(t, outboxAsker(d, n), "not read yet")
	if _, err := d.MigrateDown(1); err != nil {
		t.Fatal(err)
	}
	if n := count(t, d, `SELECT COUNT(*) FROM notify_events WHERE kind = 'question' AND subject = $1 AND expanded_at IS NULL AND user_id = 'b' AND actor_id = 'a'`, unread.ID); n != 1 {
		t.Fatalf("the unread question has %d events to expand after the step down, want 1", n)
	}
	if n := questionEvents(t, d, read.ID); n != 1 {
		t.Fatalf("the read question has %d events after the step down, want its 1", n)
	}
	if err := d.MigrateUp(); err != nil {
		t.Fatal(err)
	}
}
