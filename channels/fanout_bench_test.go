package channels

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/wait"
)

// BenchmarkWaitFanOut measures the channels service alone, without HTTP or
// MCP: 500 members wait, one post wakes them all, and last-ms is the time
// from the post's commit to the return of the last waiter's Wait, which
// includes reading the message and moving the member's read cursor. The
// members wait after the same sequence number ("after", as
// BenchmarkChannelFanOut in api does over real MCP HTTP), or for their
// unread messages ("unread": each claim is a write transaction of its own).
//
//	go test ./channels -run '^$' -bench WaitFanOut -benchtime 20x
func BenchmarkWaitFanOut(b *testing.B) {
	for _, e := range dbtest.Engines {
		for _, mode := range []string{"after", "unread"} {
			b.Run(string(e)+"/"+mode, func(b *testing.B) {
				benchWaitFanOut(b, e, mode == "after")
			})
		}
	}
}

func benchWaitFanOut(b *testing.B, e db.Engine, withAfter bool) {
	const members = 500
	d := dbtest.Open(b, e)
	s := fixture(b, d)
	noRecheck(s)
	ctx := dbtest.Operator()
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
		last = append(last, fanOutOnce(b, s, ids, int64(i), withAfter))
	}
	b.ReportMetric(quantileMS(last, 0.5), "last-p50-ms")
	b.ReportMetric(quantileMS(last, 0.99), "last-p99-ms")
}

func fanOutOnce(b *testing.B, s *Service, ids []string, seq int64, withAfter bool) time.Duration {
	got := make(chan time.Time, len(ids))
	for _, id := range ids {
		go func() {
			after := &seq
			if !withAfter {
				after = nil
			}
			m, err := s.Wait(dbtest.Operator(), ctalk.Caller{OrgID: "acme", UserID: id}, "all", after, wait.Options{Timeout: time.Minute})
			if err != nil || len(m.Messages) != 1 {
				b.Errorf("%s: %v, %v", id, m, err)
			}
			got <- time.Now()
		}()
	}
	// Every waiter is subscribed once the broker counts them all.
	for s.waker.Waiting() < len(ids) {
		time.Sleep(time.Millisecond)
	}
	b.StartTimer()
	if _, err := s.Post(dbtest.Operator(), alice, Post{Channel: "all", Text: fmt.Sprint("round ", seq+1)}); err != nil {
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
