package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ctalk/ctalk/internal/mcpclient"
)

// FanOut is how long a post to a big channel takes to reach every member's
// waiting agent.
type FanOut struct {
	Setting string `json:"setting"`
	Members int    `json:"members"`
	Rounds  int    `json:"rounds"`
	Errors  int    `json:"errors"`
	// LastP50MS and LastP99MS are over the rounds, of the time from the
	// post_message call to the return of the round's last waiter;
	// EachP50MS and EachP99MS over every waiter of every round.
	LastP50MS float64 `json:"last_p50_ms"`
	LastP99MS float64 `json:"last_p99_ms"`
	EachP50MS float64 `json:"each_p50_ms"`
	EachP99MS float64 `json:"each_p99_ms"`
	PostP50MS float64 `json:"post_p50_ms"`
	// CPUMS is the CPU time this process (server and clients, with
	// -url the clients alone) spent per round, from the post to the last
	// return, mean over the rounds: on a machine shared with other work it
	// varies less than the latencies.
	CPUMS float64 `json:"cpu_ms_per_round"`
	// DBCPUMS is the CPU time the Postgres backends of the server's
	// database spent in the same span, mean over the rounds, when Postgres
	// runs on this machine; DBRoundCPUMS theirs over whole rounds, from one
	// post to the next, which counts the writes put off until the last
	// waiter returned and the next round's waits starting.
	DBCPUMS      float64 `json:"db_cpu_ms_per_round,omitempty"`
	DBRoundCPUMS float64 `json:"db_cpu_ms_per_whole_round,omitempty"`
	TargetP99    float64 `json:"target_p99_ms"`
	Skipped      bool    `json:"skipped,omitempty"`
	Note         string  `json:"note,omitempty"`
	FirstError   string  `json:"first_error,omitempty"`
}

// fanOutChannel is the channel every member of the fan-out org waits on.
const fanOutChannel = "all"

// waitCount reports how many agents wait on a server (see waitingOn).
type waitCount = func(context.Context) (int, error)

// phaseFanOut measures a post to a channel of -fanout-members members, each
// waiting in wait_for_message through the wire client: in one process, and
// across two replicas on one Postgres (half of the members wait on each, the
// post is made on the first).
func (r *runner) phaseFanOut(ctx context.Context) error {
	n := r.cfg.FanOutMembers
	one := FanOut{Setting: "one process", Members: n, TargetP99: 100}
	two := FanOut{Setting: "two replicas", Members: n, TargetP99: 250, Skipped: true}
	here := r.waitingOn(r.url, r.broker)
	if here == nil {
		one.Skipped, one.Note = true, "needs to see the server's waiting agents: pass -metrics-token with -url"
		two.Note = one.Note
		r.res.FanOut = append(r.res.FanOut, one, two)
		return nil
	}
	// Each waiting member holds a connection, both ends in this process.
	if err := raiseFileLimit(uint64(2*n) + fileSlack); err != nil {
		r.note("fan-out: %v", err)
	}
	replica, why, err := r.replica(ctx)
	if err != nil {
		return err
	}
	o, err := r.newOrg(ctx, r.url, "fanout", n+1, false)
	if err != nil {
		return err
	}
	poster, err := r.createFanOutChannel(ctx, o)
	if err != nil {
		return err
	}
	members, err := r.wireAll(ctx, r.url, o.tokens[1:])
	if err != nil {
		return err
	}
	var after int64
	one = r.fanOut(ctx, one, poster, members, here, &after)
	r.res.FanOut = append(r.res.FanOut, one)

	if replica == nil {
		two.Note = why
	} else {
		// Every other member waits on the replica; a session belongs to the
		// server that opened it.
		var odd []string
		for i := 1; i < len(members); i += 2 {
			odd = append(odd, o.tokens[1+i])
		}
		there, err := r.wireAll(ctx, replica.URL, odd)
		if err != nil {
			return err
		}
		for i := range there {
			members[1+2*i] = there[i]
		}
		other := r.waitingOn(replica.URL, replica.Broker)
		both := func(ctx context.Context) (int, error) {
			a, err := here(ctx)
			if err != nil {
				return 0, err
			}
			b, err := other(ctx)
			return a + b, err
		}
		two = r.fanOut(ctx, FanOut{Setting: "two replicas", Members: n, TargetP99: 250}, poster, members, both, &after)
		two.Note = "second in-process server on the same Postgres, its own pool, broker and LISTEN connection; every other member waits on it, the post is made on the first"
	}
	r.res.FanOut = append(r.res.FanOut, two)
	for _, f := range r.res.FanOut {
		r.logf("  fan-out %-13s %d members, %3d rounds  last p50 %6.1f ms  p99 %6.1f ms  each p99 %6.1f ms  errors %d %s",
			f.Setting, f.Members, f.Rounds, f.LastP50MS, f.LastP99MS, f.EachP99MS, f.Errors, f.FirstError)
	}
	return nil
}

// createFanOutChannel has the org's first user create the channel and invite
// everyone else, and returns that user's wire session, the poster.
func (r *runner) createFanOutChannel(ctx context.Context, o *org) (*mcpclient.Wire, error) {
	ws, err := r.wireAll(ctx, r.url, o.tokens[:1])
	if err != nil {
		return nil, err
	}
	poster := ws[0]
	if err := poster.Call(ctx, "create_channel", map[string]any{"channel": fanOutChannel}); err != nil {
		return nil, err
	}
	for i := 1; i < len(o.users); i += 100 {
		ids := o.users[i:min(i+100, len(o.users))]
		if err := poster.Call(ctx, "invite_to_channel", map[string]any{"channel": fanOutChannel, "user_ids": ids}); err != nil {
			return nil, err
		}
	}
	return poster, nil
}

// wireAll opens an MCP session per token on base and returns the wire
// sessions that continue them.
func (r *runner) wireAll(ctx context.Context, base string, tokens []string) ([]*mcpclient.Wire, error) {
	sessions, err := r.connectAll(ctx, base, tokens)
	if err != nil {
		return nil, err
	}
	out := make([]*mcpclient.Wire, len(sessions))
	for i, cs := range sessions {
		out[i] = r.cl.wire(base, tokens[i], cs)
	}
	return out, nil
}

// arrival is one waiter's return in a round.
type arrival struct {
	at  time.Time
	err error
}

// fanOut runs the rounds of one setting, after a first round that is not
// counted (it opens the members' connections). In each, every member calls
// wait_for_message on the channel after *after; once waiting counts all of
// them, the poster posts, and the round ends when every call has returned.
// Rounds are bounded by -fanout-rounds and by -d, counted from the end of the
// first; at least one is counted.
func (r *runner) fanOut(ctx context.Context, res FanOut, poster *mcpclient.Wire, members []*mcpclient.Wire, waiting waitCount, after *int64) FanOut {
	var last, each, post, cpu, dbcpu []time.Duration
	// dbAt and dbStart are the backends' CPU time at the start of the
	// latest and of the first counted round.
	var dbAt, dbStart time.Duration
	fail := func(err error) {
		res.Errors++
		if res.FirstError == "" {
			res.FirstError = err.Error()
		}
	}
	var deadline time.Time
	for round := 0; round <= r.cfg.FanOutRounds && (round <= 1 || time.Now().Before(deadline)) && ctx.Err() == nil; round++ {
		lat, took, used, dbUsed, dbNow, err := r.fanOutRound(ctx, res.Setting, poster, members, waiting, after, round)
		if round == 0 {
			deadline = time.Now().Add(r.cfg.Duration)
		}
		if err != nil {
			fail(err)
			continue
		}
		if round == 0 {
			continue
		}
		if len(last) == 0 {
			dbStart = dbNow
		}
		dbAt = dbNow
		last, each, post, cpu, dbcpu = append(last, slices.Max(lat)), append(each, lat...), append(post, took), append(cpu, used), append(dbcpu, dbUsed)
	}
	res.Rounds = len(last)
	res.LastP50MS, res.LastP99MS = quantileMS(last, 0.50), quantileMS(last, 0.99)
	res.EachP50MS, res.EachP99MS = quantileMS(each, 0.50), quantileMS(each, 0.99)
	res.PostP50MS = quantileMS(post, 0.50)
	for i := range cpu {
		res.CPUMS += float64(cpu[i]) / float64(time.Millisecond) / float64(len(cpu))
		res.DBCPUMS += float64(dbcpu[i]) / float64(time.Millisecond) / float64(len(cpu))
	}
	if len(last) > 1 && dbAt > dbStart {
		res.DBRoundCPUMS = float64(dbAt-dbStart) / float64(time.Millisecond) / float64(len(last)-1)
	}
	return res
}

// fanOutRound is one round of fanOut: it returns each waiter's latency from
// just before the post_message call, the post's own, the CPU time this
// process and the database's backends spent meanwhile, and the backends'
// CPU time so far at the post, and moves *after to the posted message.
//
// A round starts once the servers count every member as waiting: a wait
// counts from its subscription to the channel's wake-ups, which comes before
// its first look for new messages, so a member still looking when the post
// commits finds it there; none can miss it.
func (r *runner) fanOutRound(ctx context.Context, setting string, poster *mcpclient.Wire, members []*mcpclient.Wire, waiting waitCount, after *int64, round int) (lat []time.Duration, took, used, dbUsed, dbAt time.Duration, err error) {
	before, err := waiting(ctx)
	if err != nil {
		return nil, 0, 0, 0, 0, err
	}
	want := *after + 1
	got := make(chan arrival, len(members))
	args := map[string]any{"channel": fanOutChannel, "after": *after, "timeout_s": 60}
	for _, m := range members {
		go pprof.Do(ctx, pprof.Labels("side", "client"), func(ctx context.Context) {
			c, cancel := callCtx(ctx)
			defer cancel()
			raw, err := m.Result(c, "wait_for_message", args)
			at := time.Now()
			if err == nil {
				err = handed(raw, want)
			}
			got <- arrival{at, err}
		})
	}
	settled := mcpclient.Poll(ctx, 30*time.Second, time.Millisecond, func() (bool, error) {
		n, err := waiting(ctx)
		return err != nil || n-before >= len(members), err
	})
	// Post even when the members were not all seen waiting, so that none is
	// left waiting into the next round.
	if r.cfg.FanOutProfile != "" && round > 0 {
		stop, err := profileRound(fmt.Sprintf("%s.%s.%d", r.cfg.FanOutProfile, strings.ReplaceAll(setting, " ", "-"), round))
		if err != nil {
			return nil, 0, 0, 0, 0, err
		}
		defer stop()
	}
	// The backends are listed before the round, so that the query is not
	// in it; one the pool opens during the round is left out.
	bs, err := dbBackends(ctx, r.db)
	if err != nil {
		return nil, 0, 0, 0, 0, err
	}
	dbAt = bs.cpu()
	cpu0 := cpuTime()
	sent := time.Now()
	raw, postErr := poster.Result(ctx, "post_message", map[string]any{"channel": fanOutChannel, "text": "fan-out round " + strconv.Itoa(round)})
	took = time.Since(sent)
	if postErr == nil {
		var m struct {
			Seq int64 `json:"seq"`
		}
		if postErr = json.Unmarshal(raw, &m); postErr == nil && m.Seq != want {
			postErr = fmt.Errorf("post_message made seq %d, not %d: another post in the channel?", m.Seq, want)
		}
		*after = m.Seq
	}
	lat = make([]time.Duration, 0, len(members))
	var errs []error
	for range members {
		select {
		case a := <-got:
			if a.err != nil {
				errs = append(errs, a.err)
				continue
			}
			lat = append(lat, a.at.Sub(sent))
		case <-time.After(90 * time.Second):
			return nil, 0, 0, 0, 0, errors.New("a member's wait_for_message never returned")
		}
	}
	used = cpuTime() - cpu0
	dbUsed = bs.cpu() - dbAt
	switch {
	case settled != nil:
		return nil, 0, 0, 0, 0, fmt.Errorf("the members were not all seen waiting: %w", settled)
	case postErr != nil:
		return nil, 0, 0, 0, 0, postErr
	case len(errs) > 0:
		return nil, 0, 0, 0, 0, fmt.Errorf("%d of %d waits failed; first: %w", len(errs), len(members), errs[0])
	}
	return lat, took, used, dbUsed, dbAt, nil
}

// profileRound starts a CPU profile written to path, and returns the
// function that ends it.
func profileRound(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("fan-out profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("fan-out profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// cpuTime is the CPU time, user and system, this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// handed checks that a wait_for_message result hands over message seq.
func handed(raw json.RawMessage, seq int64) error {
	var d struct {
		Messages []struct {
			Seq int64 `json:"seq"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("wait_for_message: %w", err)
	}
	if len(d.Messages) == 0 || d.Messages[0].Seq != seq {
		return fmt.Errorf("wait_for_message returned %d messages, not message %d", len(d.Messages), seq)
	}
	return nil
}

// fanOutTargets judges the last waiter's latency in each fan-out setting.
func (r *runner) fanOutTargets() {
	res := r.res
	for _, f := range res.FanOut {
		name := fmt.Sprintf("fan-out to %d waiters, last waiter p99 <= %.0f ms (%s)", f.Members, f.TargetP99, f.Setting)
		res.Targets = append(res.Targets, latencyTarget(name, f.TargetP99, f.LastP99MS, f.Rounds, f.Skipped, f.Note, "no round completed: "+f.FirstError))
	}
	if !r.cfg.Phases["fanout"] {
		res.Targets = append(res.Targets, Target{Name: "fan-out to a channel's waiters (one process, two replicas)", Status: statusSkipped, Note: "phase not run"})
	}
	for _, f := range res.FanOut {
		if f.Errors > 0 {
			r.note("fan-out (%s): %d rounds failed; first: %s", f.Setting, f.Errors, f.FirstError)
		}
	}
}
