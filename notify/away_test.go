package notify_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/notify"
)

// TestAwayPersonIsSentNothing: while b is away, b's question is expanded
// into no delivery and nothing is held for later; once b is back, the next
// question is mailed; a's events go out meanwhile.
func TestAwayPersonIsSentNothing(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		srv := mailtest.Start(t)
		s := newService(t, d, srv)
		var back atomic.Bool
		s.SkipAway(func(_ context.Context, orgID, userID string) (time.Time, error) {
			if userID == "b" && !back.Load() {
				return time.Now().Add(time.Hour), nil
			}
			return time.Time{}, nil
		})
		queue(t, d, s, question("q_1"))
		toA := question("q_2")
		toA.UserID, toA.Actor = "a", "b"
		queue(t, d, s, toA)
		drain(t, s)
		if n := count(t, d, `SELECT COUNT(*) FROM notify_deliveries WHERE user_id = 'b'`); n != 0 {
			t.Fatalf("%d deliveries to b while away; want none", n)
		}
		if n := count(t, d, `SELECT COUNT(*) FROM notify_deliveries WHERE user_id = 'a'`); n == 0 {
			t.Fatal("nothing delivered to a, who is not away")
		}
		back.Store(true)
		queue(t, d, s, question("q_3"))
		drain(t, s)
		got := srv.WaitFor(t, 2)
		for _, m := range got {
			if m.To[0] == "bo@acme.test" && m.Header.Get("Subject") != "Ann asks you a question" {
				t.Errorf("mail to b: %q", m.Header.Get("Subject"))
			}
		}
		if n := count(t, d, `SELECT COUNT(*) FROM notify_deliveries WHERE user_id = 'b'`); n != 1 {
			t.Fatalf("%d deliveries to b once back; want the one of q_3 only", n)
		}
	})
}

// TestForwardEndsTheReminders: a question its recipient forwarded reminds
// them of nothing, nor tells the asker that it still waits with them, though
// the asker has no channel for the forward. The clock is in working hours,
// when the reminder falls within the drains (out of them it fell days later,
// and the test passed without the forward's event).
func TestForwardEndsTheReminders(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		workingClock(d, time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
		srv := mailtest.Start(t)
		s := newService(t, d, srv)
		ctx := dbtest.Operator()
		if _, err := s.SaveOrgSettings(ctx, "acme", notify.OrgSettings{TextMode: notify.TextNone, ReminderMinutes: 60}); err != nil {
			t.Fatal(err)
		}
		queue(t, d, s, question("q_1"))
		drain(t, s)
		srv.WaitFor(t, 1)
		queue(t, d, s, notify.Event{Kind: notify.KindForwarded, OrgID: "acme", UserID: "a", Actor: "b", Subject: "q_1", Link: "/asked#q-q_1"})
		real := d.Now
		t.Cleanup(func() { d.Now = real })
		for _, m := range []time.Duration{61, 122, 300} {
			d.Now = func() time.Time { return real().Add(m * time.Minute) }
			drain(t, s)
		}
		if n := count(t, d, `SELECT COUNT(*) FROM notify_deliveries`); n != 1 {
			t.Fatalf("%d deliveries; want only the question's, no reminder of the forwarded question", n)
		}
	})
}
