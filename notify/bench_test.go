package notify_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/notify"
)

// BenchmarkDrain queues 1,000 question events at once for a person whose
// only channel is a webhook on loopback that answers at once, and drains
// them with one replica's worker: events/s is the drain rate, from the
// queue to the receiver's acceptance.
func BenchmarkDrain(b *testing.B) {
	const events = 1000
	for _, e := range dbtest.Engines {
		b.Run(string(e), func(b *testing.B) {
			d := dbtest.Open(b, e)
			seed(b, d)
			s := newService(b, d, nil)
			ctx := context.Background()
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
			var total time.Duration
			round := 0
			for b.Loop() {
				b.StopTimer()
				evs := make([]notify.Event, events)
				for i := range evs {
					evs[i] = question(fmt.Sprintf("q_%d_%d", round, i))
				}
				round++
				queue(b, d, s, evs...)
				b.StartTimer()
				start := time.Now()
				if err := s.Drain(ctx); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
			}
			if n := count(b, d, `SELECT COUNT(*) FROM notify_deliveries WHERE status = 'sent'`); n != events*round {
				b.Fatalf("%d sent, want %d", n, events*round)
			}
			b.ReportMetric(float64(events*round)/total.Seconds(), "events/s")
			_ = db.Postgres
		})
	}
}
