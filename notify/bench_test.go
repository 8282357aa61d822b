package notify_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/notify"
)

// BenchmarkDrain queues 10,000 question events at once for a person whose
// only channel is a webhook on loopback that answers at once, and drains
// them with one replica's worker: events/s is the drain rate, from the
// queue to the receiver's acceptance; statements/event counts the
// statements the drain sends to the database.
func BenchmarkDrain(b *testing.B) {
	const events = 10000
	for _, e := range dbtest.Engines {
		b.Run(string(e), func(b *testing.B) {
			d := dbtest.Open(b, e)
			seed(b, d)
			s := newService(b, d, nil)
			ctx := dbtest.Operator()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
			b.Cleanup(srv.Close)
			if _, err := s.SaveSettings(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, notify.Settings{Channels: map[notify.Kind][]string{notify.KindQuestion: {notify.ChannelWebhook}}}); err != nil {
				b.Fatal(err)
			}
			if _, _, err := s.AddWebhook(ctx, "acme", "b", "b", srv.URL, notify.FormatJSON); err != nil {
				b.Fatal(err)
			}
			if _, err := s.SaveOrgSettings(ctx, "acme", notify.OrgSettings{TextMode: notify.TextFirstLine}); err != nil {
				b.Fatal(err)
			}
			var statements atomic.Int64
			round, total := timeBursts(b, d, s, events, func() error {
				d.OnStatement(func(string) { statements.Add(1) })
				defer d.OnStatement(nil)
				return s.Drain(ctx)
			})
			if n := count(b, d, `SELECT COUNT(*) FROM notify_deliveries WHERE status = 'sent'`); n != events*round {
				b.Fatalf("%d sent, want %d", n, events*round)
			}
			b.ReportMetric(float64(events*round)/total.Seconds(), "events/s")
			b.ReportMetric(float64(statements.Load())/float64(events*round), "statements/event")
		})
	}
}

// BenchmarkCommitToWebhook measures, with the worker running as a replica
// runs it (polling every 0.5 s, woken by its own queueing), the time from
// an event's commit to a webhook on loopback accepting it, one event at a
// time: p50 and p99 over the run (target p99 ≤ 1 s for webhooks).
func BenchmarkCommitToWebhook(b *testing.B) {
	for _, e := range dbtest.Engines {
		b.Run(string(e), func(b *testing.B) {
			d := dbtest.Open(b, e)
			seed(b, d)
			got := make(chan time.Time, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNoContent)
				got <- time.Now()
			}))
			b.Cleanup(srv.Close)
			s := newService(b, d, nil, func(c *notify.Config) { c.Poll = 500 * time.Millisecond })
			ctx, cancel := context.WithCancel(dbtest.Operator())
			b.Cleanup(cancel)
			if _, _, err := s.AddWebhook(ctx, "acme", "b", "b", srv.URL, notify.FormatJSON); err != nil {
				b.Fatal(err)
			}
			if _, err := s.SaveOrgSettings(ctx, "acme", notify.OrgSettings{TextMode: notify.TextFirstLine}); err != nil {
				b.Fatal(err)
			}
			go s.Run(ctx)
			var lat []time.Duration
			i := 0
			for b.Loop() {
				i++
				queue(b, d, s, question(fmt.Sprintf("q_%d", i)))
				committed := time.Now()
				select {
				case at := <-got:
					lat = append(lat, at.Sub(committed))
				case <-time.After(10 * time.Second):
					b.Fatal("the webhook got nothing in 10 s")
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkCommitToSMTP is BenchmarkCommitToWebhook for email: from the
// commit to a real SMTP server on loopback accepting the mail (target p99
// ≤ 2 s).
func BenchmarkCommitToSMTP(b *testing.B) {
	for _, e := range dbtest.Engines {
		b.Run(string(e), func(b *testing.B) {
			d := dbtest.Open(b, e)
			seed(b, d)
			srv := mailtest.Start(b)
			s := newService(b, d, srv, func(c *notify.Config) { c.Poll = 500 * time.Millisecond })
			ctx, cancel := context.WithCancel(dbtest.Operator())
			b.Cleanup(cancel)
			go s.Run(ctx)
			var lat []time.Duration
			i := 0
			for b.Loop() {
				i++
				queue(b, d, s, question(fmt.Sprintf("q_%d", i)))
				committed := time.Now()
				srv.WaitFor(b, i)
				lat = append(lat, time.Since(committed))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkExpand queues 10,000 question events at once for a person
// whose channel is email, with the digest window on, as ctalk-bench
// -notify's asks are, and expands them with one worker, without
// delivering: events/s is the expansion rate, µs/event its time per
// event, which on SQLite, where the expansion holds the one writer, an
// ask's throughput pays for.
func BenchmarkExpand(b *testing.B) {
	const events = 10000
	for _, e := range dbtest.Engines {
		b.Run(string(e), func(b *testing.B) {
			d := dbtest.Open(b, e)
			seed(b, d)
			s := newService(b, d, mailtest.Start(b), func(c *notify.Config) { c.DigestWindow = notify.DefaultDigestWindow })
			ctx := dbtest.Operator()
			round, total := timeBursts(b, d, s, events, func() error {
				for {
					n, err := s.ExpandOnce(ctx)
					if err != nil || n == 0 {
						return err
					}
				}
			})
			b.ReportMetric(float64(events*round)/total.Seconds(), "events/s")
			b.ReportMetric(float64(total.Microseconds())/float64(events*round), "µs/event")
		})
	}
}

// timeBursts queues a burst of n question events for each round of b's
// loop, with the timer stopped, and times do on each; it returns the
// rounds and their total time.
func timeBursts(b *testing.B, d *db.DB, s *notify.Service, n int, do func() error) (rounds int, total time.Duration) {
	for b.Loop() {
		b.StopTimer()
		evs := make([]notify.Event, n)
		for i := range evs {
			evs[i] = question(fmt.Sprintf("q_%d_%d", rounds, i))
		}
		rounds++
		queue(b, d, s, evs...)
		b.StartTimer()
		start := time.Now()
		if err := do(); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
	}
	return rounds, total
}
