package channels

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// BenchmarkWaitFanOut measures the channels service alone, without HTTP or
// MCP: 500 members wait after the same sequence number, one post wakes them
// all, and last-ms is the time from the post's commit to the return of the
// last waiter's Wait, which includes reading the message and moving the
// member's read cursor. BenchmarkChannelFanOut in api measures the same over
// real MCP HTTP.
//
//	go test ./channels -run '^$' -bench WaitFanOut -benchtime 20x
func BenchmarkWaitFanOut(b *testing.B) {
	const members = 500
	for _, e := range dbtest.Engines {
		b.Run(string(e), func(b *testing.B) {
			d := dbtest.Open(b, e)
			s := fixture(b, d)
			noRecheck(s)
			ctx := context.Background()
			ids := make([]string, members)
			for i := range ids {
				ids[i] = fmt.Sprintf("w%03d", i)
				if _, err := dbtest.Exec(d, `INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ('acme', $1, $1, 'x', 'member', $2, $2)`, ids[i], d.Now()); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := s.Create(ctx, alice, NewChannel{Name: "all"}); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < members; i += MaxInvite {
				if _, err := s.Invite(ctx, alice, "all", ids[i:i+MaxInvite]); err != nil {
					b.Fatal(err)
				}
			}
			var last []time.Duration
			for i := range b.N {
				b.StopTimer()
				last = append(last, fanOutOnce(b, s, d, ids, int64(i)))
			}
			b.ReportMetric(quantileMS(last, 0.5), "last-p50-ms")
			b.ReportMetric(quantileMS(last, 0.99), "last-p99-ms")
		})
	}
}

func fanOutOnce(b *testing.B, s *Service, d *db.DB, ids []string, seq int64) time.Duration {
	got := make(chan time.Time, len(ids))
	for _, id := range ids {
		go func() {
			m, err := s.Wait(context.Background(), Caller{OrgID: "acme", UserID: id}, "all", &seq, WaitOptions{Timeout: time.Minute})
			if err != nil || len(m.Messages) != 1 {
				b.Errorf("%s: %v, %v", id, m, err)
			}
			got <- time.Now()
		}()
	}
	// Every waiter is subscribed once the broker counts them all.
	for s.waker.(interface{ Waiting() int }).Waiting() < len(ids) {
		time.Sleep(time.Millisecond)
	}
	b.StartTimer()
	if _, err := s.Post(context.Background(), alice, Post{Channel: "all", Text: fmt.Sprint("round ", seq+1)}); err != nil {
		b.Fatal(err)
	}
	sent := time.Now()
	var at time.Time
	for range ids {
		at = <-got
	}
	b.StopTimer()
	return at.Sub(sent)
}

func quantileMS(ds []time.Duration, q float64) float64 {
	s := slices.Sorted(slices.Values(ds))
	return float64(s[int(q*float64(len(s)-1))]) / float64(time.Millisecond)
}
