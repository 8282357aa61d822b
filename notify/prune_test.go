package notify_test

import (
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/notify"
)

// TestPruneKeepsWhatIsPending delivers one question and holds another in
// quiet hours, with the org's reminders off, then prunes past the
// retention: the delivered one's rows go, the held one stays and is still
// sent.
func TestPruneKeepsWhatIsPending(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		srv := mailtest.Start(t)
		s := newService(t, d, srv)
		ctx := dbtest.Operator()
		if _, err := s.SaveOrgSettings(ctx, "acme", notify.OrgSettings{TextMode: notify.TextFirstLine}); err != nil {
			t.Fatal(err)
		}
		queue(t, d, s, question("q_1"))
		drain(t, s)
		srv.WaitFor(t, 1)
		now := d.Now().UTC()
		_, err := s.SaveSettings(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, notify.Settings{QuietStart: now.Add(-time.Hour).Format("15:04"), QuietEnd: now.Add(time.Hour).Format("15:04")})
		if err != nil {
			t.Fatal(err)
		}
		queue(t, d, s, question("q_2"))
		drain(t, s)
		real := d.Now
		t.Cleanup(func() { d.Now = real })
		d.Now = func() time.Time { return real().Add(notify.Retention + time.Minute) }
		if err := s.Prune(ctx); err != nil {
			t.Fatal(err)
		}
		if n := count(t, d, `SELECT COUNT(*) FROM notify_deliveries`); n != 1 {
			t.Fatalf("%d deliveries after pruning, want the pending one", n)
		}
		if n := count(t, d, `SELECT COUNT(*) FROM notify_events WHERE subject = 'q_1' AND kind = 'question'`); n != 0 {
			t.Fatalf("the delivered question's event was kept")
		}
		drain(t, s)
		srv.WaitFor(t, 2)
	})
}

// TestPruneKeepsAPendingReminder delivers a question, then prunes past the
// retention before its reminder was taken: the question's event, which
// holds the reminder, stays, and the reminder still goes out.
func TestPruneKeepsAPendingReminder(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		srv := mailtest.Start(t)
		s := newService(t, d, srv)
		ctx := dbtest.Operator()
		queue(t, d, s, question("q_1"))
		drain(t, s)
		srv.WaitFor(t, 1)
		if n := count(t, d, `SELECT COUNT(*) FROM notify_events WHERE subject = 'q_1' AND remind_at IS NOT NULL`); n != 1 {
			t.Fatalf("%d events of q_1 hold a reminder, want 1", n)
		}
		real := d.Now
		t.Cleanup(func() { d.Now = real })
		d.Now = func() time.Time { return real().Add(notify.Retention + time.Minute) }
		if err := s.Prune(ctx); err != nil {
			t.Fatal(err)
		}
		if n := count(t, d, `SELECT COUNT(*) FROM notify_events WHERE subject = 'q_1' AND kind = 'question'`); n != 1 {
			t.Fatalf("the question's event, which holds its reminder, was pruned")
		}
		drain(t, s)
		if subj := srv.WaitFor(t, 2)[1].Header.Get("Subject"); subj != "Ann's question still waits for you" {
			t.Fatalf("second mail %q, want the reminder of q_1", subj)
		}
	})
}
