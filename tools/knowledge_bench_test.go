package tools_test

import (
	"cmp"
	"fmt"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
)

// BenchmarkAskPersonLookUp measures ask_person over real MCP HTTP with its
// look-up in the org's shared answers against without it (ask_anyway),
// side by side on one server: 50 shared answers about the deploy pipeline,
// and questions that share some of their words. In look, the words of all
// the org's answers together do not reach the coverage of an offer; in
// look_searched they do (each question names four pipelines) but no one
// answer holds enough of them, which the look-up searched for before each
// replica kept an index of the answers, and now decides in it. Both then
// ask. In look_offered one answer holds the question (each asks an earlier
// question again): it is read by its id and offered, and nothing is asked.
// The modes take turns call by call; look-x, look_searched-x and
// look_offered-x are their throughputs over ask_anyway's, whose target is
// at least 0.8x.
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
			modes := []string{"ask_anyway", "look", "look_searched", "look_offered"}
			want := map[string]string{"look_offered": "not_asked"}
			spent := make([]time.Duration, len(modes))
			for i := range b.N {
				// The modes take turns, call by call, so that the load of a
				// shared machine weighs on each alike.
				for m, mode := range modes {
					q := fmt.Sprintf("How long does deploy %s %d take to roll back?", mode, i)
					switch mode {
					case "look_searched":
						q = fmt.Sprintf("Pipeline %d, %d, %d or %d: which region?", 10+i%10, 20+i%10, 30+i%10, 40+i%10)
					case "look_offered":
						q = fmt.Sprintf("Which region does deploy pipeline %d use?", i%50)
					}
					start := time.Now()
					got := ok(b, u["carol"], "ask_person", map[string]any{"to_user_id": "bob", "question": q, "ask_anyway": mode == "ask_anyway"})
					spent[m] += time.Since(start)
					if got["status"] != cmp.Or(want[mode], "pending") {
						b.Fatalf("ask_person = %v", got)
					}
				}
			}
			for m, mode := range modes {
				b.ReportMetric(float64(b.N)/spent[m].Seconds(), mode+"-asks/s")
			}
			b.ReportMetric(spent[0].Seconds()/spent[1].Seconds(), "look-x")
			b.ReportMetric(spent[0].Seconds()/spent[2].Seconds(), "look_searched-x")
			b.ReportMetric(spent[0].Seconds()/spent[3].Seconds(), "look_offered-x")
		})
	}
}
