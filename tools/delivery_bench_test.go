package tools_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/testkit"
)

// BenchmarkDeliveryLatency measures how long an answer takes to reach an
// agent that waits for it: from the moment it is sent to the moment the
// asker's wait_for_reply returns it, over real HTTP. It is sent either by
// the answering agent's send_response call (over MCP), or by its person's
// approval in the web app: the approve form posted with their browser
// session and CSRF token, their agent disconnected (its draft stored
// through the inbox service). With two replicas, the asker waits on the
// second and the answer is sent on the first. It reports p50 and p99 in
// milliseconds from the send, and from its acknowledgement (ack-: the
// call's result, or the form's redirect) until the asker has the answer.
//
//	go test ./tools -run '^$' -bench DeliveryLatency -benchtime 200x
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
	for _, by := range []string{"send_response", "approval"} {
		for _, c := range cases {
			b.Run(by+"/"+c.name, func(b *testing.B) {
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
				propose := func(id string) { ok(b, alice, "propose_response", map[string]any{"message_id": id, "draft_text": "a"}) }
				send := func(id string) { ok(b, alice, "send_response", map[string]any{"message_id": id, "final_text": "a"}) }
				if by == "approval" {
					alice.Close()
					drafts := inbox.NewService(one.DB, inbox.DefaultConfig(), one.Broker)
					propose = func(id string) {
						if _, _, err := drafts.Propose(dbtest.Operator(), ctalk.Caller{OrgID: "acme", UserID: "alice"}, id, "a"); err != nil {
							b.Fatal(err)
						}
					}
					browser, csrf := personBrowser(b, one.URL, "acme", "alice")
					send = func(id string) {
						if status := submit(b, browser, one.URL+"/inbox/"+id+"/approve", url.Values{"csrf": {csrf}, "version": {"1"}}); status != http.StatusSeeOther {
							b.Fatalf("approve in the web app: %d", status)
						}
					}
				}

				// lat runs from the send; afterAck from its acknowledgement,
				// when the answer is committed and the sender told.
				lat := make([]time.Duration, 0, b.N)
				afterAck := make([]time.Duration, 0, b.N)
				for i := range b.N {
					b.StopTimer()
					id := ok(b, u["bob"], "ask_person", map[string]any{"to_user_id": "alice", "question": fmt.Sprint("q", i)})["message_id"].(string)
					propose(id)
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
					send(id)
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
				b.ReportMetric(testkit.QuantileMS(lat, 0.50), "p50-ms")
				b.ReportMetric(testkit.QuantileMS(lat, 0.99), "p99-ms")
				b.ReportMetric(testkit.QuantileMS(afterAck, 0.50), "ack-p50-ms")
				b.ReportMetric(testkit.QuantileMS(afterAck, 0.99), "ack-p99-ms")
			})
		}
	}
}
