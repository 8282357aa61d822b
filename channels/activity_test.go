package channels

import (
	"fmt"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestActivityKeepsEndedDays posts over three days and reads the overview's
// activity on the third: the ended days are counted once and kept
// (channel_days, the empty one marked too), so that a message stored in an
// ended day afterwards is not counted again, while today's are counted on
// every read; another org sees none of them.
func TestActivityKeepsEndedDays(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		t0 := time.Date(2026, 11, 10, 9, 0, 0, 0, time.UTC)
		now := t0
		d.Now = func() time.Time { return now }
		s := fixture(t, d)
		must(s.Create(ctx, bob, NewChannel{Name: "general", Members: []string{"alice"}}))
		must(s.Create(ctx, alice, NewChannel{Name: "ops"}))
		post := func(c ctalk.Caller, channel string, agent bool) {
			must(s.Post(ctx, c, Post{Channel: channel, Text: "hello", ByAgent: agent}))
		}
		post(bob, "general", false)
		post(alice, "general", true)
		post(alice, "ops", true)
		now = t0.Add(48 * time.Hour) // the 11th passes without a message
		post(bob, "general", true)

		since := t0.Add(-24 * time.Hour)
		want := "[{general 2026-11-10 2 1} {ops 2026-11-10 1 1} {general 2026-11-12 1 1}]"
		if got := activity(t, s, "acme", since); got != want {
			t.Fatalf("activity %s, want %s", got, want)
		}
		var kept int
		if err := d.QueryRow(ctx, `SELECT COUNT(*) FROM channel_days WHERE org_id = 'acme' AND channel = ''`).Scan(&kept); err != nil {
			t.Fatal(err)
		}
		if kept != 3 {
			t.Errorf("%d days marked kept, want the 9th, 10th and 11th", kept)
		}
		// A message stored in a kept day is not counted again; today's is.
		if _, err := dbtest.Exec(d, `INSERT INTO channel_messages (org_id, channel, seq, id, author_id, by_agent, body, created_at)
			VALUES ('acme', 'ops', 99, 'm_late', 'alice', false, 'late', $1)`, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		post(bob, "general", false)
		want = "[{general 2026-11-10 2 1} {ops 2026-11-10 1 1} {general 2026-11-12 2 1}]"
		if got := activity(t, s, "acme", since); got != want {
			t.Errorf("read again: %s, want %s", got, want)
		}
		if got := activity(t, s, "acme", t0.Add(24*time.Hour)); got != "[{general 2026-11-12 2 1}]" {
			t.Errorf("from the 11th: %s, want today's alone", got)
		}
		if got := activity(t, s, "other", since); got != "[]" {
			t.Errorf("org other: %s, want nothing", got)
		}
	})
}

// activity is Activity's answer in words.
func activity(t *testing.T, s *Service, orgID string, since time.Time) string {
	t.Helper()
	rows, err := s.Activity(dbtest.Operator(), orgID, since)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(rows)
}
