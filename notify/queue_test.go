package notify_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/outbound"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/notify"
)

// TestReplicasDeliverEachEventOnce runs four replicas' queues, each on its
// own connection pool to one database, over 200 events at once: the
// receiver gets every event exactly once.
func TestReplicasDeliverEachEventOnce(t *testing.T) {
	for _, e := range dbtest.Engines {
		t.Run(string(e), func(t *testing.T) {
			cfg := dbtest.Config(t, e)
			ctx := dbtest.Operator()
			var replicas []*notify.Service
			var first *db.DB
			for i := range 4 {
				d, err := db.Open(ctx, cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { d.Close() })
				if i == 0 {
					first = d
					seed(t, d)
				}
				replicas = append(replicas, newService(t, d, nil))
			}
			r := newReceiver(t)
			_, secret, err := replicas[0].AddWebhook(ctx, "acme", "b", "b", r.URL, notify.FormatJSON)
			if err != nil {
				t.Fatal(err)
			}
			r.secret = secret
			const events = 200
			var evs []notify.Event
			for i := range events {
				evs = append(evs, question(fmt.Sprint("q_", i)))
			}
			queue(t, first, replicas[0], evs...)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for _, s := range replicas {
				wg.Go(func() {
					<-start
					// Several rounds each, so that the replicas claim side by side.
					for range 20 {
						if _, err := s.Step(ctx); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			close(start)
			wg.Wait()
			for _, s := range replicas {
				drain(t, s)
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if len(r.hits) != events {
				t.Fatalf("the receiver got %d events, want %d", len(r.hits), events)
			}
			for id, n := range r.hits {
				if n != 1 {
					t.Fatalf("event %s was delivered %d times", id, n)
				}
			}
		})
	}
}

// TestLeaseRunsOutAndAnotherSends claims a delivery on one replica that
// then dies before sending (its lease is left behind): once the lease runs
// out, another replica sends it.
func TestLeaseRunsOutAndAnotherSends(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		srv := mailtest.Start(t)
		s := newService(t, d, srv)
		queue(t, d, s, question("q_1"))
		drain(t, s)
		srv.WaitFor(t, 1)
		// A second event, whose delivery a dead replica holds.
		queue(t, d, s, question("q_2"))
		if err := s.Expand(dbtest.Operator()); err != nil {
			t.Fatal(err)
		}
		lease := d.Now().Add(time.Minute)
		if _, err := dbtest.Exec(d, `UPDATE notify_deliveries SET lease_until = $1, claim = 'dead', attempts = 1 WHERE status = 'pending'`, lease); err != nil {
			t.Fatal(err)
		}
		drain(t, s)
		if n := len(srv.Messages()); n != 1 {
			t.Fatalf("%d mails, want the held one not sent while its lease runs", n)
		}
		real := d.Now
		t.Cleanup(func() { d.Now = real })
		d.Now = func() time.Time { return real().Add(2 * time.Minute) }
		drain(t, s)
		srv.WaitFor(t, 2)
	})
}

// TestQuietHoursHoldUntilTheyEnd sets quiet hours around now in the
// person's zone: a question is held until they end, an urgent post goes at
// once when the person lets urgent ones through.
func TestQuietHoursHoldUntilTheyEnd(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		srv := mailtest.Start(t)
		s := newService(t, d, srv)
		ctx := dbtest.Operator()
		loc, _ := time.LoadLocation("Asia/Tokyo")
		now := d.Now().In(loc)
		start, end := now.Add(-time.Hour).Format("15:04"), now.Add(time.Hour).Format("15:04")
		_, err := s.SaveSettings(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, notify.Settings{QuietStart: start, QuietEnd: end, TimeZone: "Asia/Tokyo", UrgentInQuiet: true,
			Channels: map[notify.Kind][]string{notify.KindUrgent: {notify.ChannelEmail}}})
		if err != nil {
			t.Fatal(err)
		}
		urgent := notify.Event{Kind: notify.KindUrgent, OrgID: "acme", UserID: "b", Actor: "a", Text: "prod is down", Link: "/channels/ops", Urgent: true}
		queue(t, d, s, question("q_1"), urgent)
		drain(t, s)
		got := srv.WaitFor(t, 1)
		if len(got) != 1 || !strings.Contains(got[0].Header.Get("Subject"), "urgent") {
			t.Fatalf("during quiet hours got %d mails, want only the urgent one", len(got))
		}
		real := d.Now
		t.Cleanup(func() { d.Now = real })
		d.Now = func() time.Time { return real().Add(61 * time.Minute) }
		drain(t, s)
		srv.WaitFor(t, 2)
	})
}

// TestReminderAndAskersNote lets a question wait past the org's reminder
// time: its recipient is reminded, and one reminder time later the asker
// is told it still waits; an answer before then ends both.
func TestReminderAndAskersNote(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		// A Tuesday morning: the next five hours are working hours.
		workingClock(d, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		srv := mailtest.Start(t)
		s := newService(t, d, srv)
		ctx := dbtest.Operator()
		if _, err := s.SaveOrgSettings(ctx, "acme", notify.OrgSettings{TextMode: notify.TextNone, ReminderMinutes: 60}); err != nil {
			t.Fatal(err)
		}
		for _, k := range notify.Kinds {
			if _, err := s.SaveSettings(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, notify.Settings{Channels: map[notify.Kind][]string{notify.KindStillWaiting: {notify.ChannelEmail}}}); err != nil {
				t.Fatal(err, k)
			}
		}
		queue(t, d, s, question("q_1"), question("q_2"))
		drain(t, s)
		srv.WaitFor(t, 2)
		answered := notify.Event{Kind: notify.KindAnswered, OrgID: "acme", UserID: "a", Actor: "b", Subject: "q_2", Link: "/asked"}
		queue(t, d, s, answered)
		real := d.Now
		t.Cleanup(func() { d.Now = real })
		at := func(m time.Duration) { d.Now = func() time.Time { return real().Add(m) } }
		at(61 * time.Minute)
		drain(t, s)
		got := srv.WaitFor(t, 3)
		if subj := got[2].Header.Get("Subject"); subj != "Ann's question still waits for you" {
			t.Fatalf("third mail %q, want the reminder of q_1", subj)
		}
		if strings.Contains(got[2].Text, "Is the release") {
			t.Errorf("text_mode none, yet the reminder carries the question")
		}
		at(122 * time.Minute)
		drain(t, s)
		got = srv.WaitFor(t, 4)
		if subj := got[3].Header.Get("Subject"); !strings.HasPrefix(subj, "Your question to Bo still waits") || got[3].To[0] != "ann@acme.test" {
			t.Fatalf("fourth mail %q to %v, want the asker's note", subj, got[3].To)
		}
		at(300 * time.Minute)
		drain(t, s)
		if n := len(srv.Messages()); n != 4 {
			t.Fatalf("%d mails, want no reminder of the answered q_2 and nothing more", n)
		}
	})
}

// TestProductionRefusesLoopbackWebhooks uses the production settings: an
// http:// webhook is refused when added, and an https:// one on loopback
// is refused when dialled, and disabled.
func TestProductionRefusesLoopbackWebhooks(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		cfg := notify.DefaultConfig()
		cfg.PublicURL = "https://ctalk.test"
		s := notify.NewService(d, cfg, directory)
		ctx := dbtest.Operator()
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		r := newReceiver(t)
		if _, _, err := s.AddWebhook(ctx, "acme", "b", "b", r.URL, notify.FormatJSON); err == nil || !strings.Contains(err.Error(), "https://") {
			t.Fatalf("an http:// webhook: %v", err)
		}
		if _, _, err := s.AddWebhook(ctx, "acme", "b", "b", "https://"+strings.TrimPrefix(r.URL, "http://")+"/hook", notify.FormatJSON); err != nil {
			t.Fatal(err)
		}
		queue(t, d, s, question("q_1"))
		drain(t, s)
		hooks, _ := s.Webhooks(ctx, "acme", "b")
		if len(hooks) != 1 || hooks[0].DisabledAt == nil || !strings.Contains(hooks[0].DisabledReason, outbound.Unreachable) {
			t.Fatalf("webhooks = %+v, want it disabled as loopback", hooks)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.hits)+r.badSigs != 0 {
			t.Fatalf("the loopback receiver was reached")
		}
	})
}

// TestMailsWithinTheWindowComeAsOneDigest sends a question at once, holds
// the two that follow within the digest window, and sends them as one mail
// when it ends; a webhook is not held.
func TestMailsWithinTheWindowComeAsOneDigest(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		srv, s := mailedOnce(t, d)
		queue(t, d, s, question("q_2"), question("q_3"))
		drain(t, s)
		if n := len(srv.Messages()); n != 1 {
			t.Fatalf("%d mails within the window, want the first only", n)
		}
		real := d.Now
		t.Cleanup(func() { d.Now = real })
		d.Now = func() time.Time { return real().Add(3 * time.Minute) }
		drain(t, s)
		got := srv.WaitFor(t, 2)
		if len(got) != 2 {
			t.Fatalf("%d mails, want the first and one digest", len(got))
		}
		digest := got[1]
		if subj := digest.Header.Get("Subject"); !strings.HasPrefix(subj, "2 notifications from ctalk") {
			t.Errorf("digest subject %q", subj)
		}
		for _, id := range []string{"q_2", "q_3"} {
			if !strings.Contains(digest.Text, "https://ctalk.test/inbox/"+id) || !strings.Contains(digest.HTML, "https://ctalk.test/inbox/"+id) {
				t.Errorf("the digest does not link %s:\n%s", id, digest.Text)
			}
		}
		if n := count(t, d, `SELECT COUNT(*) FROM notify_deliveries WHERE status = 'sent'`); n != 3 {
			t.Errorf("%d deliveries recorded sent, want all 3", n)
		}
		if n := count(t, d, `SELECT COUNT(*) FROM notify_deliveries WHERE attempts <> 1`); n != 0 {
			t.Errorf("%d deliveries count a hold as an attempt", n)
		}
	})
}

// mailedOnce seeds d and returns a service with a digest window of two
// minutes that has just mailed b a question (q_1), and the mail server.
func mailedOnce(t *testing.T, d *db.DB) (*mailtest.Server, *notify.Service) {
	t.Helper()
	seed(t, d)
	srv := mailtest.Start(t)
	s := newService(t, d, srv, func(c *notify.Config) { c.DigestWindow = 2 * time.Minute })
	queue(t, d, s, question("q_1"))
	drain(t, s)
	srv.WaitFor(t, 1)
	return srv, s
}

// TestMailsWithinTheWindowWaitUnclaimed: a mail expanded within the digest
// window of the person's last one is stored due when the window ends, so
// that no worker claims it only to hold it; mails due at once within the
// window (expanded before the last one went, say by another replica) are
// held in one statement for the person, not one each. Neither is sent.
func TestMailsWithinTheWindowWaitUnclaimed(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		srv, s := mailedOnce(t, d)
		var holds atomic.Int64
		d.OnStatement(func(q string) {
			if strings.Contains(q, "attempts = attempts - 1") {
				holds.Add(1)
			}
		})
		t.Cleanup(func() { d.OnStatement(nil) })
		queue(t, d, s, question("q_2"), question("q_3"))
		drain(t, s)
		if n := holds.Load(); n != 0 {
			t.Errorf("%d holds of mails expanded within the window; want them stored due at its end", n)
		}
		if n := count(t, d, `SELECT COUNT(*) FROM notify_deliveries WHERE status = 'pending' AND attempts = 0 AND next_at > $1`, d.Now().Add(time.Minute)); n != 2 {
			t.Errorf("%d mails wait for the window's end unclaimed, want 2", n)
		}
		if _, err := dbtest.Exec(d, `UPDATE notify_deliveries SET next_at = $1 WHERE status = 'pending'`, d.Now()); err != nil {
			t.Fatal(err)
		}
		drain(t, s)
		if n := holds.Load(); n != 1 {
			t.Errorf("%d statements held two mails to one address, want 1", n)
		}
		if n := count(t, d, `SELECT COUNT(*) FROM notify_deliveries WHERE status = 'pending' AND attempts = 0 AND next_at > $1`, d.Now().Add(time.Minute)); n != 2 {
			t.Errorf("%d mails held for the window's end, want 2", n)
		}
		if n := len(srv.Messages()); n != 1 {
			t.Errorf("%d mails within the window, want the first only", n)
		}
	})
}

// TestLastMailIsReadByItsIndex: the read of a person's last mail, made for
// every mail about to go and every person whose events are expanded, seeks
// its index rather than walking every delivery of the person.
func TestLastMailIsReadByItsIndex(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		plan := dbtest.Plan(t, d, notify.LastEmailSQL, "acme", "b", "bo@acme.test")
		if !strings.Contains(plan, "notify_deliveries_mailed") {
			t.Fatalf("the last mail's read does not use notify_deliveries_mailed:\n%s", plan)
		}
	})
}

// TestInsertsKeepTheirArgumentsFew expands a claim of 40 events into their
// deliveries: on SQLite in an insert of one row each (its driver binds a
// statement of n arguments in n² steps), on Postgres in one insert, a
// round trip, for all of them.
func TestInsertsKeepTheirArgumentsFew(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(t, d, nil)
		hookedReceiver(t, s)
		var evs []notify.Event
		for i := range 40 {
			evs = append(evs, question(fmt.Sprint("q_", i)))
		}
		queue(t, d, s, evs...)
		var mu sync.Mutex
		var inserts []int
		d.OnStatement(func(q string) {
			if strings.Contains(q, "INSERT INTO notify_deliveries") {
				mu.Lock()
				inserts = append(inserts, strings.Count(q, "$"))
				mu.Unlock()
			}
		})
		t.Cleanup(func() { d.OnStatement(nil) })
		if err := s.Expand(dbtest.Operator()); err != nil {
			t.Fatal(err)
		}
		d.OnStatement(nil)
		mu.Lock()
		defer mu.Unlock()
		if n := count(t, d, `SELECT COUNT(*) FROM notify_deliveries`); n != 40 {
			t.Fatalf("%d deliveries, want 40", n)
		}
		if d.Engine == db.Postgres {
			if len(inserts) != 1 {
				t.Fatalf("%d inserts of the deliveries, want 1", len(inserts))
			}
			return
		}
		for _, args := range inserts {
			if args != 8 {
				t.Fatalf("an insert of %d arguments (all: %v), want 8, one row", args, inserts)
			}
		}
	})
}

// TestOrgWebhookCarriesNoWords adds an org webhook: a question to a member
// reaches it naming the member, without the question's words, and a draft
// waiting for the member's approval does not reach it.
func TestOrgWebhookCarriesNoWords(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(t, d, nil)
		r := newReceiver(t)
		_, secret, err := s.AddWebhook(dbtest.Operator(), "acme", "", "a", r.URL, notify.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		r.secret = secret
		draft := question("q_1")
		draft.Kind = notify.KindDraft
		queue(t, d, s, question("q_1"), draft)
		drain(t, s)
		v := r.only(t)
		if v["title"] != "For Bo: Ann asks you a question" || v["text"] != "" {
			t.Fatalf("org webhook got %v", v)
		}
	})
}

// workingClock sets d's clock to run from base on.
func workingClock(d *db.DB, base time.Time) {
	start := time.Now()
	d.Now = func() time.Time { return base.Add(time.Since(start)).Truncate(time.Microsecond) }
}

// TestClaimTakesItsBatch queues 40 events for a person with a webhook on a
// replica that sends 4 at once: after the expansion, one round sends 4 and
// leases no other delivery (on Postgres a claim once took every due row).
func TestClaimTakesItsBatch(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		ctx := dbtest.Operator()
		s := newService(t, d, nil, func(c *notify.Config) { c.Batch, c.Workers = 4, 4 })
		r := hookedReceiver(t, s)
		var evs []notify.Event
		for i := range 40 {
			evs = append(evs, question(fmt.Sprint("q_", i)))
		}
		queue(t, d, s, evs...)
		if err := s.Expand(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Step(ctx); err != nil {
			t.Fatal(err)
		}
		if n := count(t, d, `SELECT COUNT(*) FROM notify_deliveries WHERE status = 'sent' OR lease_until IS NOT NULL`); n != 4 {
			t.Fatalf("one round took %d deliveries, want its batch of 4", n)
		}
		if ok, _ := r.got(4)(); !ok {
			t.Fatal("the receiver did not get the round's 4 events")
		}
	})
}

// TestAnyDueReadsTheQueuesIndexes: the look for due work, made at every
// round of the worker, reads the index of each queue, also with 3,000
// expanded events whose reminders are all ahead and no statistics yet (a
// burst before autovacuum analyzes the table), where Postgres took a due
// reminder to be common and read every event.
func TestAnyDueReadsTheQueuesIndexes(t *testing.T) {
	d := dbtest.Open(t, db.Postgres)
	if _, err := dbtest.Exec(d, `INSERT INTO notify_events (id, org_id, user_id, kind, created_at, due_at, expanded_at, remind_at)
		SELECT 'ev_' || g, 'acme', 'b', 'question', $1, $1, $1, $2 FROM generate_series(1, 3000) g`, d.Now(), d.Now().Add(4*time.Hour)); err != nil {
		t.Fatal(err)
	}
	var plan []string
	err := d.Each(dbtest.Operator(), `EXPLAIN `+notify.AnyDueSQL, []any{d.Now()}, func(r *db.Rows) error {
		var line string
		err := r.Scan(&line)
		plan = append(plan, line)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := strings.Join(plan, "\n"); strings.Contains(p, "Seq Scan") {
		t.Fatalf("the look for due work reads a whole table:\n%s", p)
	}
}
