package tools_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
)

// BenchmarkDeliveryLatency measures how long an answer takes to reach an
// agent that waits for it: from the moment the answering agent calls
// send_response to the moment the asker's wait_for_reply returns it, both
// over real MCP HTTP. It reports p50 and p99 in milliseconds.
//
//	go test ./api -run '^$' -bench DeliveryLatency -benchtime 200x
func BenchmarkDeliveryLatency(b *testing.B) {
	cases := []struct {
		name     string
		engine   db.Engine
		replicas int
	}{
		{"sqlite/one-process", db.SQLite, 1},
		{"postgres/one-process", db.Postgres, 1},
		{"postgres/two-replicas", db.Postgres, 2},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			unlimited := func(c *inbox.Config) { c.AsksPerMinute, c.LoopMax = 1<<30, 0 }
			one := start(b, c.engine, options{Inbox: unlimited})
			two := one
			if c.replicas == 2 {
				two = start(b, c.engine, options{Inbox: unlimited, SharedWith: one})
			}
			u := one.Org(b, eraStateless, "acme")
			alice := u["alice"]
			// bob waits on the second replica; alice answers on the first.
			bob := two.Connect(b, eraStateless, two.Login(b, two.Connect(b, eraStateless, ""), "acme", "bob"))

			// lat runs from the send_response call; afterAck from its reply,
			// when the answer is committed and acknowledged to the answerer.
			lat := make([]time.Duration, 0, b.N)
			afterAck := make([]time.Duration, 0, b.N)
			for i := range b.N {
				b.StopTimer()
				id := ok(b, u["bob"], "ask_person", map[string]any{"to_user_id": "alice", "question": fmt.Sprint("q", i)})["message_id"].(string)
				ok(b, alice, "propose_response", map[string]any{"message_id": id, "draft_text": "a"})
				got := make(chan time.Time, 1)
				waiting := two.Broker.Waiting()
				go func() {
					ok(b, bob, "wait_for_reply", map[string]any{"message_id": id, "timeout_s": 30})
					got <- time.Now()
				}()
				for two.Broker.Waiting() == waiting {
					time.Sleep(50 * time.Microsecond)
				}
				b.StartTimer()
				sent := time.Now()
				ok(b, alice, "send_response", map[string]any{"message_id": id, "final_text": "a"})
				acked := time.Now()
				select {
				case at := <-got:
					lat = append(lat, at.Sub(sent))
					afterAck = append(afterAck, max(at.Sub(acked), 0))
				case <-time.After(20 * time.Second):
					b.Fatal("the answer never reached the waiting agent")
				}
			}
			b.StopTimer()
			b.ReportMetric(quantileMS(lat, 0.50), "p50-ms")
			b.ReportMetric(quantileMS(lat, 0.99), "p99-ms")
			b.ReportMetric(quantileMS(afterAck, 0.50), "ack-p50-ms")
			b.ReportMetric(quantileMS(afterAck, 0.99), "ack-p99-ms")
		})
	}
}

// quantileMS returns the q quantile of ds in milliseconds.
func quantileMS(ds []time.Duration, q float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[int(q*float64(len(s)-1))]) / float64(time.Millisecond)
}
