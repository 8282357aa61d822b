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

// reminderDue queues a question to Bo at the clock's time and expands it,
// and returns when his reminder is due.
func reminderDue(t *testing.T, d *db.DB, s *notify.Service, id string, at time.Time) time.Time {
	t.Helper()
	d.Now = func() time.Time { return at }
	queue(t, d, s, question(id))
	if err := s.Expand(dbtest.Operator()); err != nil {
		t.Fatal(err)
	}
	var due time.Time
	if err := d.QueryRow(dbtest.Operator(), `SELECT remind_at FROM notify_events WHERE kind = 'question' AND subject = $1`, id).Scan(&due); err != nil {
		t.Fatalf("no reminder for %s: %v", id, err)
	}
	return due.UTC()
}

// TestRemindersCountWorkingHours: the org's reminder time (4 hours by
// default) is counted in the recipient's working hours in their time zone,
// Monday to Friday 09:00 to 17:00 unless they chose others: a question on
// a Friday afternoon is reminded on Monday, one in the evening the next
// day, and chosen hours move it accordingly.
func TestRemindersCountWorkingHours(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		ctx := dbtest.Operator()
		real := d.Now
		t.Cleanup(func() { d.Now = real })
		srv := mailtest.Start(t)
		s := newService(t, d, srv)
		if _, err := s.SaveSettings(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, notify.Settings{TimeZone: "Europe/Berlin"}); err != nil {
			t.Fatal(err)
		}
		berlin, _ := time.LoadLocation("Europe/Berlin")
		at := func(y int, m time.Month, day, h, min int) time.Time {
			return time.Date(y, m, day, h, min, 0, 0, berlin)
		}
		cases := []struct {
			name     string
			ask, due time.Time
		}{
			{"Friday 15:00: two hours on Friday, two on Monday", at(2026, 12, 4, 15, 0), at(2026, 12, 7, 11, 0)},
			{"Tuesday 20:00: the evening counts nothing", at(2026, 12, 1, 20, 0), at(2026, 12, 2, 13, 0)},
			{"Saturday: the weekend counts nothing", at(2026, 12, 5, 11, 0), at(2026, 12, 7, 13, 0)},
			{"Wednesday 08:00: from nine", at(2026, 12, 2, 8, 0), at(2026, 12, 2, 13, 0)},
			{"Monday 10:30: within the day", at(2026, 12, 7, 10, 30), at(2026, 12, 7, 14, 30)},
		}
		for i, c := range cases {
			if got := reminderDue(t, d, s, "q_w"+string(rune('a'+i)), c.ask.UTC()); !got.Equal(c.due.UTC()) {
				t.Errorf("%s: reminder due %s, want %s", c.name, got.In(berlin), c.due)
			}
		}
		// Four days a week, 10:00 to 14:00: Thursday 13:00 leaves one hour,
		// the next three on Monday.
		_, err := s.SaveSettings(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, notify.Settings{TimeZone: "Europe/Berlin", WorkDays: []int{1, 2, 3, 4}, WorkStart: "10:00", WorkEnd: "14:00"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := reminderDue(t, d, s, "q_four", at(2026, 12, 3, 13, 0).UTC()), at(2026, 12, 7, 13, 0); !got.Equal(want) {
			t.Errorf("four-day week: reminder due %s, want %s", got.In(berlin), want)
		}
		for name, in := range map[string]notify.Settings{
			"no day":        {WorkDays: []int{}},
			"day 8":         {WorkDays: []int{8}},
			"end <= start":  {WorkStart: "17:00", WorkEnd: "09:00"},
			"not a time":    {WorkStart: "nine"},
			"empty weekday": {WorkDays: []int{0}},
		} {
			if _, err := s.SaveSettings(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, in); ctalk.ErrorCode(err) != ctalk.EInvalid {
				t.Errorf("%s: got %v, want EInvalid", name, err)
			}
		}
	})
}

// TestNoEventForNobody: an event whose person can be reached nowhere (no
// email ctalk can send to, no webhook, no browser, or every channel of
// the kind turned off, or paused) is not queued; once they can be, it is.
// An answer that must end a pending reminder is queued whoever it reaches.
func TestNoEventForNobody(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		ctx := dbtest.Operator()
		events := func() int { return count(t, d, `SELECT COUNT(*) FROM notify_events`) }
		noMail := newService(t, d, nil, func(c *notify.Config) { c.Workers = 1 })
		draft := question("q_1")
		draft.Kind = notify.KindDraft
		queue(t, d, noMail, draft)
		if n := events(); n != 0 {
			t.Fatalf("with no email, webhook or browser, %d events were queued", n)
		}
		srv := mailtest.Start(t)
		s := newService(t, d, srv)
		queue(t, d, s, draft)
		if n := events(); n != 1 {
			t.Fatalf("with email, %d events queued, want 1", n)
		}
		off := map[notify.Kind][]string{}
		for _, k := range notify.Kinds {
			off[k] = []string{}
		}
		if _, err := s.SaveSettings(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, notify.Settings{Channels: off}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SaveSettings(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, notify.Settings{Channels: off}); err != nil {
			t.Fatal(err)
		}
		queue(t, d, s, draft, question("q_2"))
		if n := events(); n != 1 {
			t.Fatalf("with every channel off, %d events queued, want still 1", n)
		}
		if _, err := s.SaveSettings(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, notify.Settings{Paused: true}); err != nil {
			t.Fatal(err)
		}
		queue(t, d, s, draft)
		if n := events(); n != 1 {
			t.Fatalf("while paused, %d events queued, want still 1", n)
		}
		// Bo reachable again: his question is queued with its reminder to
		// come; Ann, reachable nowhere, is not told of the answer, but the
		// answer is queued, to end the reminder.
		if _, err := s.SaveSettings(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, notify.Settings{}); err != nil {
			t.Fatal(err)
		}
		queue(t, d, s, question("q_3"))
		drain(t, s)
		answered := notify.Event{Kind: notify.KindAnswered, OrgID: "acme", UserID: "a", Actor: "b", Subject: "q_3", Link: "/asked"}
		queue(t, d, s, answered)
		if n := count(t, d, `SELECT COUNT(*) FROM notify_events WHERE kind = 'answered'`); n != 1 {
			t.Fatalf("the answer ending a pending reminder was not queued (%d)", n)
		}
		other := answered
		other.Subject = "q_none"
		queue(t, d, s, other)
		if n := count(t, d, `SELECT COUNT(*) FROM notify_events WHERE kind = 'answered'`); n != 1 {
			t.Fatalf("an answer reaching nobody and ending nothing was queued")
		}
	})
}
