package tools_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
)

// BenchmarkRowLevelSecurity measures ask_person, check_inbox and a
// channel post over real MCP HTTP on two Postgres servers side by side:
// one whose statements run as the tables' owner, which row-level security
// does not bind (off), and one whose statements run as a role that owns
// nothing, each scoped to its org (on). The servers take turns call by
// call, the first of each turn alternating, so that the load of a shared
// machine weighs on both alike; TOOL-x is on's throughput over off's,
// whose target is at least 0.9x.
//
//	TEST_DATABASE_URL=... go test ./tools -run '^$' -bench RowLevelSecurity -benchtime 300x
func BenchmarkRowLevelSecurity(b *testing.B) {
	unlimited := func(c *inbox.Config) { c.AsksPerMinute, c.LoopMax = 1<<30, 1<<30 }
	type server struct {
		name string
		rls  bool
		ask  func(i int) map[string]any
		rest map[string]func(i int)
	}
	servers := []*server{{name: "off"}, {name: "on", rls: true}}
	tools := []string{"ask_person", "check_inbox", "post_message"}
	for _, s := range servers {
		e := start(b, db.Postgres, options{Inbox: unlimited, RLS: s.rls})
		if got := e.DB.RLS(); got != s.rls {
			b.Fatalf("%s: RLS() = %v", s.name, got)
		}
		u := e.Org(b, eraStateless, "acme")
		ok(b, u["alice"], "create_channel", map[string]any{"channel": "dev", "members": []string{"bob", "carol"}})
		for i := range 10 {
			ok(b, u["carol"], "ask_person", map[string]any{"to_user_id": "bob", "question": fmt.Sprintf("Warm-up question %d?", i), "ask_anyway": true})
		}
		s.rest = map[string]func(i int){
			"ask_person": func(i int) {
				got := ok(b, u["carol"], "ask_person", map[string]any{"to_user_id": "alice", "question": fmt.Sprintf("What is the retry logic of service %d?", i), "ask_anyway": true})
				if got["status"] != "pending" {
					b.Fatalf("ask_person = %v", got)
				}
			},
			"check_inbox": func(int) {
				if got := ok(b, u["bob"], "check_inbox", map[string]any{}); len(got["questions"].([]any)) != 10 {
					b.Fatalf("check_inbox = %v", got)
				}
			},
			"post_message": func(i int) {
				ok(b, u["bob"], "post_message", map[string]any{"channel": "dev", "text": fmt.Sprintf("build %d is green", i)})
			},
		}
	}
	b.ResetTimer()
	spent := map[string]time.Duration{}
	for i := range b.N {
		for _, tool := range tools {
			// Which server goes first alternates, so that neither always
			// follows the other's work.
			for k := range servers {
				s := servers[(i+k)%len(servers)]
				start := time.Now()
				s.rest[tool](i)
				spent[s.name+"/"+tool] += time.Since(start)
			}
		}
	}
	for _, tool := range tools {
		for _, s := range servers {
			b.ReportMetric(float64(b.N)/spent[s.name+"/"+tool].Seconds(), s.name+"-"+tool+"/s")
		}
		b.ReportMetric(spent["off/"+tool].Seconds()/spent["on/"+tool].Seconds(), tool+"-x")
	}
}
