package tools_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
)

// BenchmarkAskPersonLookUp measures ask_person over real MCP HTTP with its
// look-up in the org's shared answers against without it (ask_anyway),
// side by side on one server: 50 shared answers about the deploy pipeline,
// and questions that share some of their words but not enough to be held
// back, so that every call looks and then asks. In look, the words of all
// the org's answers together do not reach the coverage of an offer, so the
// look-up decides without searching; in look_searched they do (each
// question names four pipelines), so every call also searches, and the
// answers holding too few of its words are not ranked (on Postgres). The
// modes take turns call by call; look-x and look_searched-x are their
// throughputs over ask_anyway's, whose target is at least 0.8x.
//
//	go test ./tools -run '^$' -bench AskPersonLookUp -benchtime 200x
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
		b.Run(string(engine), func(b *testing.B) {
			modes := []string{"ask_anyway", "look", "look_searched"}
			spent := make([]time.Duration, len(modes))
			for i := range b.N {
				// The modes take turns, call by call, so that the load of a
				// shared machine weighs on each alike.
				for m, mode := range modes {
					q := fmt.Sprintf("How long does deploy %s %d take to roll back?", mode, i)
					if mode == "look_searched" {
						q = fmt.Sprintf("Pipeline %d, %d, %d or %d: which region?", 10+i%10, 20+i%10, 30+i%10, 40+i%10)
					}
					start := time.Now()
					got := ok(b, u["carol"], "ask_person", map[string]any{"to_user_id": "bob", "question": q, "ask_anyway": mode == "ask_anyway"})
					spent[m] += time.Since(start)
					if got["status"] != "pending" {
						b.Fatalf("ask_person = %v", got)
					}
				}
			}
			for m, mode := range modes {
				b.ReportMetric(float64(b.N)/spent[m].Seconds(), mode+"-asks/s")
			}
			b.ReportMetric(spent[0].Seconds()/spent[1].Seconds(), "look-x")
			b.ReportMetric(spent[0].Seconds()/spent[2].Seconds(), "look_searched-x")
		})
	}
}
