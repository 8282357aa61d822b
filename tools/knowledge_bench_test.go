package tools_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
)

// BenchmarkAskPersonLookUp measures ask_person over real MCP HTTP with its
// look-up in the org's shared answers (look) against without it
// (ask_anyway), side by side on one server: 50 shared answers about the
// deploy pipeline, and questions that share some of their words but not
// enough to be held back, so that every call searches and then asks. The
// target is look's throughput at least 0.8x of ask_anyway's (ns/op of
// ask_anyway over ns/op of look).
//
//	go test ./tools -run '^$' -bench AskPersonLookUp -benchtime 300x
func BenchmarkAskPersonLookUp(b *testing.B) {
	for _, engine := range []db.Engine{db.SQLite, db.Postgres} {
		unlimited := func(c *inbox.Config) { c.AsksPerMinute, c.LoopMax = 1<<30, 1<<30 }
		e := start(b, engine, options{Inbox: unlimited})
		u := e.Org(b, eraStateless, "acme")
		for i := range 50 {
			id := ok(b, u["bob"], "ask_person", map[string]any{"to_user_id": "alice", "question": fmt.Sprintf("Which region does deploy pipeline %d use?", i), "ask_anyway": true})["message_id"].(string)
			text := fmt.Sprintf("Pipeline %d deploys to region eu-west-%d.", i, i%3)
			ok(b, u["alice"], "propose_response", map[string]any{"message_id": id, "draft_text": text})
			ok(b, u["alice"], "send_response", map[string]any{"message_id": id, "final_text": text, "share": true})
		}
		for _, mode := range []string{"ask_anyway", "look"} {
			b.Run(fmt.Sprintf("%s/%s", engine, mode), func(b *testing.B) {
				start := time.Now()
				for i := range b.N {
					got := ok(b, u["carol"], "ask_person", map[string]any{"to_user_id": "bob",
						"question": fmt.Sprintf("How long does deploy %s %d take to roll back?", mode, i), "ask_anyway": mode == "ask_anyway"})
					if got["status"] != "pending" {
						b.Fatalf("ask_person = %v", got)
					}
				}
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "asks/s")
			})
		}
	}
}
