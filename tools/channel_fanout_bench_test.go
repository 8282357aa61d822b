package tools_test

import (
	"fmt"
	"net/http"
	"os"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/testkit"
)

// fanOutMembers is the size of the channel BenchmarkChannelFanOut posts to.
const fanOutMembers = 500

// BenchmarkChannelFanOut measures a post to a channel of 500 members, every
// member's agent waiting in wait_for_message over real MCP HTTP: from the
// post_message call to the return of the last waiter's call (last-p50-ms,
// last-p99-ms over the rounds), and to each waiter's (each-p99-ms). With two
// replicas, half the members wait on each, and the post is made on the
// first. The members' connections stay open between rounds. The clients are
// go-sdk's and share the server's cores; cmd/ctalk-bench's fanout phase
// measures the same with a bare client.
//
//	go test ./api -run '^$' -bench ChannelFanOut -benchtime 20x
func BenchmarkChannelFanOut(b *testing.B) {
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
			// The members sign in from one address.
			many := func(c *auth.Config) { c.IPRate, c.IPBurst = 1e6, 1e6 }
			servers := []*env{start(b, c.engine, options{Auth: many})}
			if c.replicas == 2 {
				servers = append(servers, start(b, c.engine, options{Auth: many, SharedWith: servers[0]}))
			}
			poster, members := fanOutOrg(b, servers)
			var last, each []time.Duration
			for i := range b.N {
				b.StopTimer()
				l, e := fanOutRound(b, servers, poster, members, int64(i))
				last, each = append(last, l), append(each, e...)
			}
			b.ReportMetric(testkit.QuantileMS(last, 0.50), "last-p50-ms")
			b.ReportMetric(testkit.QuantileMS(last, 0.99), "last-p99-ms")
			b.ReportMetric(testkit.QuantileMS(each, 0.99), "each-p99-ms")
		})
	}
}

// fanOutOrg registers an org with fanOutMembers members in channel "all",
// spread over the servers, and returns the poster's session and the
// members' sessions.
func fanOutOrg(b *testing.B, servers []*env) (*mcp.ClientSession, []*mcp.ClientSession) {
	b.Helper()
	const era = eraStateless
	u := servers[0].Org(b, era, "acme")
	anon := servers[0].Connect(b, era, "")
	members := make([]*mcp.ClientSession, fanOutMembers)
	ids := make([]string, fanOutMembers)
	// The members keep their connections between rounds, as agents do: one
	// transport whose idle pool holds all of them (the default keeps two per
	// host, so each round would close and open the other 498).
	keep := &http.Transport{MaxIdleConns: 2 * fanOutMembers, MaxIdleConnsPerHost: 2 * fanOutMembers, IdleConnTimeout: 90 * time.Second}
	b.Cleanup(keep.CloseIdleConnections)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range fanOutMembers {
		ids[i] = fmt.Sprintf("m%03d", i)
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ok(b, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": ids[i], "name": ids[i], "password": userPW, "ownership": []string{}})
			srv := servers[i%len(servers)]
			members[i] = testkit.ConnectWith(b, srv.URL, era, testkit.Transport{Token: srv.Login(b, anon, "acme", ids[i]), Next: keep})
		})
	}
	wg.Wait()
	ok(b, u["alice"], "create_channel", map[string]any{"channel": "all"})
	for i := 0; i < fanOutMembers; i += 100 {
		ok(b, u["alice"], "invite_to_channel", map[string]any{"channel": "all", "user_ids": ids[i:min(i+100, fanOutMembers)]})
	}
	return u["alice"], members
}

// fanOutRound has every member wait for the message after seq, posts it,
// and returns how long the last waiter took and how long each did.
func fanOutRound(b *testing.B, servers []*env, poster *mcp.ClientSession, members []*mcp.ClientSession, seq int64) (time.Duration, []time.Duration) {
	b.Helper()
	waiting := func() int {
		n := 0
		for _, s := range servers {
			n += s.Broker.Waiting()
		}
		return n
	}
	before := waiting()
	got := make(chan time.Time, len(members))
	for _, m := range members {
		go func() {
			ok(b, m, "wait_for_message", map[string]any{"channel": "all", "after": seq, "timeout_s": 60})
			got <- time.Now()
		}()
	}
	testkit.WaitFor(b, 60*time.Second, "every member waiting", func() (bool, error) {
		if n := waiting() - before; n != len(members) {
			return false, fmt.Errorf("%d waiting", n)
		}
		return true, nil
	})
	b.StartTimer()
	var pf *os.File
	if dir := os.Getenv("FANOUT_PROFILE_DIR"); dir != "" {
		pf, _ = os.CreateTemp(dir, "round-*.cpu")
		pprof.StartCPUProfile(pf)
	}
	sent := time.Now()
	ok(b, poster, "post_message", map[string]any{"channel": "all", "text": fmt.Sprint("round ", seq+1)})
	each := make([]time.Duration, 0, len(members))
	for range members {
		select {
		case at := <-got:
			each = append(each, at.Sub(sent))
		case <-time.After(60 * time.Second):
			b.Fatal("a member's wait never returned the post")
		}
	}
	b.StopTimer()
	if pf != nil {
		pprof.StopCPUProfile()
		pf.Close()
	}
	return each[len(each)-1], each
}
