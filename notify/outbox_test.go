package notify_test

import (
	"fmt"
	"strings"
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
	q, err := s.Ask(dbtest.Operator(), ctalk.Caller{OrgID: "acme", UserID: "a"}, inbox.Ask{To: "b", Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// outboxWorld is a seeded database of engine e and a worker over it, for
// which b of acme added the returned receiver as a webhook.
func outboxWorld(t *testing.T, e db.Engine) (*db.DB, *notify.Service, *receiver) {
	t.Helper()
	d := dbtest.Open(t, e)
	seed(t, d)
	n := newService(t, d, nil)
	return d, n, hookedReceiver(t, n)
}

// expandOnce runs n's Expand: the worker reads the outbox once.
func expandOnce(t *testing.T, n *notify.Service) {
	t.Helper()
	if err := n.Expand(dbtest.Operator()); err != nil {
		t.Fatal(err)
	}
}

// questionEvents counts the question events of subject, expanded or not.
func questionEvents(t *testing.T, d *db.DB, subject string) int {
	t.Helper()
	return count(t, d, `SELECT COUNT(*) FROM notify_events WHERE kind = 'question' AND subject = $1`, subject)
}

// TestOutboxNotifiesEachQuestionOnce asks 400 questions from four
// goroutines on one database while the workers of two replicas' pools
// over it read the questions' outbox at the same time: each question has
// one event and one delivery, however the two workers' reads overlapped
// (on Postgres, where batches cut windows, too).
func TestOutboxNotifiesEachQuestionOnce(t *testing.T) {
	for _, e := range dbtest.Engines {
		t.Run(string(e), func(t *testing.T) { outboxNotifiesEachQuestionOnce(t, e) })
	}
}

func outboxNotifiesEachQuestionOnce(t *testing.T, e db.Engine) {
	dbs, workers := twoReplicasOn(t, e, func(*notify.Config) {})
	hookedReceiver(t, workers[0])
	asker := outboxAsker(dbs[0], workers[0])
	ctx := dbtest.Operator()
	const askers, each = 4, 100
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
	// The last reads of the two workers took a batch at most, and may
	// have met: read the rest, until a read finds none.
	for {
		n, err := workers[0].TakeOutbox(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
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
	for _, e := range dbtest.Engines {
		t.Run(string(e), func(t *testing.T) { outboxSkipsWhatItNeedNotTell(t, e) })
	}
}

func outboxSkipsWhatItNeedNotTell(t *testing.T, e db.Engine) {
	d, n, r := outboxWorld(t, e)
	if _, err := dbtest.Exec(d, `INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ('acme', 'c', 'c', 'x', 'member', $1, $1)`, d.Now()); err != nil {
		t.Fatal(err)
	}
	ctx := dbtest.Operator()
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
	d, n, _ := outboxWorld(t, db.SQLite)
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

// TestOutboxStepDownKeepsUnreadQuestions reverts the outbox's steps (31,
// SQLite's, and 32, Postgres's) with a question the worker has not read:
// it becomes an event not yet expanded, as an ask queued it before the
// steps, and nothing is lost.
func TestOutboxStepDownKeepsUnreadQuestions(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		n := newService(t, d, nil)
		hookedReceiver(t, n)
		outboxStepDownKeepsUnreadQuestions(t, d, n)
	})
}

func outboxStepDownKeepsUnreadQuestions(t *testing.T, d *db.DB, n *notify.Service) {
	read := askB(t, outboxAsker(d, n), "read by the worker")
	expandOnce(t, n)
	unread := askB(t, outboxAsker(d, n), "not read yet")
	// Revert down to before step 31, whatever migrations came after it.
	versions, err := db.Migrations(d.Engine)
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for _, v := range versions {
		if v >= 31 {
			steps++
		}
	}
	if _, err := d.MigrateDown(steps); err != nil {
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

// takeOutbox reads one batch of n's outbox and checks it read want
// questions.
func takeOutbox(t *testing.T, n *notify.Service, want int) {
	t.Helper()
	got, err := n.TakeOutbox(dbtest.Operator())
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("a read of the outbox took %d questions, want %d", got, want)
	}
}

// holdQuestion stores, in a transaction of its own that stays open until
// the returned function is called, a question marked for the outbox as an
// ask on Postgres marks it: an ask whose commit is slow.
func holdQuestion(t *testing.T, d *db.DB, id string) (commit func()) {
	t.Helper()
	stored, release, done := make(chan error, 1), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- d.Tx(dbtest.Operator(), func(q db.Querier) error {
			_, err := q.Exec(dbtest.Operator(), `INSERT INTO questions (org_id, id, asker_id, recipient_id, body, status, created_at, notify, notify_xid)
				VALUES ('acme', $1, 'a', 'b', 'held', 'pending', $2, TRUE, pg_current_xact_id())`, id, d.Now())
			stored <- err
			<-release
			return err
		})
	}()
	if err := <-stored; err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	commit = func() {
		once.Do(func() {
			close(release)
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(commit)
	return commit
}

// TestOutboxWindowOnPostgres holds one ask's transaction open while more
// than a batch of questions are asked after it: the worker notifies those
// without waiting for it, in two batches of one window whose end stays
// fixed between them, then the held question once it commits, each once.
func TestOutboxWindowOnPostgres(t *testing.T) {
	d, n, _ := outboxWorld(t, db.Postgres)
	commit := holdQuestion(t, d, "q_held")
	on := outboxAsker(d, n)
	const after = notify.OutboxBatch + 20
	for i := range after {
		askB(t, on, fmt.Sprintf("asked after the held one, %d", i))
	}
	takeOutbox(t, n, notify.OutboxBatch)
	commit()
	askB(t, on, "asked after the held one committed")
	takeOutbox(t, n, 20) // the rest of the first window, without the held one
	if got := questionEvents(t, d, "q_held"); got != 0 {
		t.Fatalf("the held question has %d events after the window it was not in, want 0", got)
	}
	takeOutbox(t, n, 2) // the held question, and the one asked after it committed
	takeOutbox(t, n, 0)
	if got := count(t, d, `SELECT COUNT(*) FROM notify_events WHERE kind = 'question'`); got != after+2 {
		t.Fatalf("%d question events, want one for each of %d questions", got, after+2)
	}
	if got := count(t, d, `SELECT COUNT(DISTINCT subject) FROM notify_events WHERE kind = 'question'`); got != after+2 {
		t.Fatalf("%d questions with an event, want %d", got, after+2)
	}
}

// TestOutboxReadsOnPastAWindowsEnd takes a window of exactly one batch,
// which leaves it taken in part, then a question asked after it: the read
// that finds the window empty closes it and takes the new question, so
// that a read taking none means none is waiting.
func TestOutboxReadsOnPastAWindowsEnd(t *testing.T) {
	d, n, _ := outboxWorld(t, db.Postgres)
	on := outboxAsker(d, n)
	for i := range notify.OutboxBatch {
		askB(t, on, fmt.Sprintf("one of a batch, %d", i))
	}
	takeOutbox(t, n, notify.OutboxBatch)
	after := askB(t, on, "asked after the batch was taken")
	takeOutbox(t, n, 1)
	if got := questionEvents(t, d, after.ID); got != 1 {
		t.Fatalf("the question asked after the batch has %d events, want 1", got)
	}
	takeOutbox(t, n, 0)
}

// TestOutboxRestartsBehindTheCursor stands for a dump restored into
// another Postgres cluster, whose transaction ids start again low: the
// cursor's snapshot is far ahead of every transaction id, and a question
// the old cluster's worker read keeps a mark of the old count that a
// window of the new one takes in. The worker starts the cursor again, and
// notifies the question asked since, not the old one.
func TestOutboxRestartsBehindTheCursor(t *testing.T) {
	d, n, _ := outboxWorld(t, db.Postgres)
	on := outboxAsker(d, n)
	old := askB(t, on, "asked on the old cluster")
	if _, err := dbtest.Exec(d, `UPDATE questions SET notify_xid = '3' WHERE id = $1`, old.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := dbtest.Exec(d, `INSERT INTO notify_cursors (name, pos, snap, moved_at) VALUES ('questions', 7, '900000000000:900000000000:', $1)
		ON CONFLICT (name) DO UPDATE SET pos = 7, snap = excluded.snap, upto = NULL, after_xid = NULL, after_id = NULL, moved_at = excluded.moved_at`, d.Now()); err != nil {
		t.Fatal(err)
	}
	asked := askB(t, on, "asked on the new cluster")
	takeOutbox(t, n, 0) // finds itself behind, and starts again
	takeOutbox(t, n, 1)
	if got := questionEvents(t, d, asked.ID); got != 1 {
		t.Fatalf("the question asked since the restore has %d events, want 1", got)
	}
	if got := questionEvents(t, d, old.ID); got != 0 {
		t.Fatalf("the old cluster's question has %d events, want none", got)
	}
	takeOutbox(t, n, 0)
}

// TestOutboxIsReadByItsIndex: the read of the outbox, made at every round
// of the worker, reads the questions from the cursor on (rowids on SQLite,
// in order; the partial index of the marks on Postgres) rather than every
// question. (On Postgres a near-empty table's plan sorts the few rows its
// index gave; with a table of 200,000 questions the plan walks the index
// in order and stops at the batch's end.)
func TestOutboxIsReadByItsIndex(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		plan := dbtest.Plan(t, d, notify.OutboxSQL[string(d.Engine)], notify.OutboxBatch)
		want := "questions_notify_xid"
		if d.Engine == db.SQLite {
			want = "SEARCH questions USING INTEGER PRIMARY KEY (rowid>?)"
		}
		if !strings.Contains(plan, want) || strings.Contains(plan, "TEMP B-TREE") {
			t.Fatalf("the outbox's read does not walk %s:\n%s", want, plan)
		}
	})
}
