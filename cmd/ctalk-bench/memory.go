package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/mcpclient"
)

// Memory is the footprint of many waiting agents on one server.
type Memory struct {
	Mode          string  `json:"mode"`
	Waiters       int     `json:"waiters"`
	RSSBaselineMB float64 `json:"rss_baseline_mb"`
	RSSWaitingMB  float64 `json:"rss_waiting_mb"`
	RSSAfterMB    float64 `json:"rss_after_mb"`
	PerWaiterKB   float64 `json:"rss_per_waiter_kb"`
	// HeapMB and StackMB split the Go runtime's memory in use, idle and
	// with every agent waiting, from the server's /metrics.
	HeapIdleMB     float64 `json:"heap_inuse_idle_mb"`
	HeapWaitingMB  float64 `json:"heap_inuse_waiting_mb"`
	HeapAfterMB    float64 `json:"heap_inuse_after_mb"`
	StackIdleMB    float64 `json:"stack_inuse_idle_mb"`
	StackWaitingMB float64 `json:"stack_inuse_waiting_mb"`
	// OpenFiles counts the child server's file descriptors, idle and with
	// every agent waiting (0 when the server is not a child process).
	OpenFilesIdle      int    `json:"open_files_idle,omitempty"`
	OpenFilesWaiting   int    `json:"open_files_waiting,omitempty"`
	GoroutinesBaseline int    `json:"goroutines_baseline"`
	GoroutinesWaiting  int    `json:"goroutines_waiting"`
	GoroutinesAfter    int    `json:"goroutines_after"`
	BackToBaseline     bool   `json:"goroutines_back_to_baseline"`
	ReturnedEarly      int    `json:"waits_returned_early"`
	FirstError         string `json:"first_error,omitempty"`
	// Wake is how soon waiting agents receive the questions asked to them
	// while all of them wait.
	Wake    *Wake  `json:"wake,omitempty"`
	Skipped bool   `json:"skipped,omitempty"`
	Note    string `json:"note,omitempty"`
}

// Wake is the time from the start of an ask_person to the return of the
// asked agent's wait_for_inbox, with every agent of the memory phase waiting.
type Wake struct {
	Asked      int     `json:"asked"`
	Samples    int     `json:"samples"`
	Errors     int     `json:"errors"`
	Askers     int     `json:"askers"`
	RatePerSec float64 `json:"asks_per_second"`
	P50MS      float64 `json:"p50_ms"`
	P99MS      float64 `json:"p99_ms"`
	MaxMS      float64 `json:"max_ms"`
	FirstError string  `json:"first_error,omitempty"`
}

// waitBatch is how many agents start waiting at once in the memory phase.
const waitBatch = 500

// goroutineSlack is how many goroutines above the baseline still count as
// back to it: the runtime and the database pool come and go.
const goroutineSlack = 5

// memoryTarget says which server the memory phase measures and how, in p: a
// child server process it starts (stopped by stop), or the -url target
// through its /metrics; with neither, it marks the phase skipped.
func (r *runner) memoryTarget(ctx context.Context, mem *Memory, p *memProbe) (stop func(), err error) {
	if r.primary == nil {
		if r.cfg.MetricsToken == "" {
			mem.Skipped, mem.Note = true, "with -url, the target's memory is read from /metrics; pass -metrics-token"
			return func() {}, nil
		}
		p.base, p.token = r.url, r.cfg.MetricsToken
		p.rss = func() (int64, error) {
			m, err := r.cl.metrics(ctx, p.base, p.token, "process_resident_memory_bytes")
			return int64(m["process_resident_memory_bytes"]), err
		}
		mem.Mode = "the target's process, through its /metrics (the baseline includes whatever it already held)"
		return func() {}, nil
	}
	dbc := r.dbcfg
	if r.engine == db.SQLite {
		dbc.Path = filepath.Join(r.tmp, "memory.db")
	}
	env := childServerEnv(dbc)
	var ch *mcpclient.Process
	if r.cfg.MemProfile != "" && r.cfg.ServerBin == "" {
		path, err := filepath.Abs(r.cfg.MemProfile)
		if err != nil {
			return nil, err
		}
		env = append(env, heapProfileEnv+"="+path)
		p.profile = func() error {
			if err := writeProfiles(ch, path); err != nil {
				return err
			}
			r.note("Heap profile of the memory phase's server with %d agents waiting: %s (goroutines: %s.goroutine).", r.cfg.Waiters, path, path)
			return nil
		}
	}
	if r.cfg.CPUProfile != "" && r.cfg.ServerBin == "" {
		path, err := filepath.Abs(r.cfg.CPUProfile + ".wake")
		if err != nil {
			return nil, err
		}
		env = append(env, cpuProfileEnv+"="+path)
		p.cpu = func(start bool) error {
			if err := toggleCPUProfile(ch, path, start); err != nil {
				return err
			}
			if !start {
				r.note("CPU profile of the memory phase's server while its agents were woken: %s.", path)
			}
			return nil
		}
	}
	if ch, err = startChild(ctx, r.cfg.ServerBin, env, filepath.Join(r.tmp, "memory-server.log")); err != nil {
		return nil, err
	}
	pid := ch.Cmd.Process.Pid
	what := "this binary re-executed as a server wired like cmd/ctalk"
	if r.cfg.ServerBin != "" {
		what = r.cfg.ServerBin
	}
	mem.Mode = fmt.Sprintf("child process (%s, pid %d, %s); RSS from /proc, goroutines from its /metrics", what, pid, r.engine)
	p.base, p.token = ch.URL, benchMetricsToken
	p.rss = func() (int64, error) { return rssBytes(pid) }
	p.files = func() (int, error) { return openFiles(pid) }
	return func() { ch.Stop(30 * time.Second) }, nil
}

// phaseMemory measures a server with many agents blocked in wait_for_inbox.
//
// The in-process server cannot be measured alone: this process also holds
// the clients of every waiting agent. So the measured server runs in a child
// process (this binary re-executed as a server wired like cmd/ctalk, or the
// -server-bin ctalk binary) on the same database, and its RSS is read from
// /proc and its goroutines from its /metrics. With -url, both come from the
// target's /metrics when -metrics-token is given.
func (r *runner) phaseMemory(ctx context.Context) error {
	mem := &Memory{Waiters: r.cfg.Waiters}
	r.res.Memory = mem
	asked := min(r.cfg.WakeSamples, r.cfg.Waiters)
	if err := raiseFileLimit(uint64(r.cfg.Waiters + fileSlack)); err != nil {
		return err
	}
	p := &memProbe{r: r, ctx: ctx}
	stop, err := r.memoryTarget(ctx, mem, p)
	if err != nil || mem.Skipped {
		return err
	}
	defer stop()
	base := p.base
	// The first asked agents are each a user of their own, so that a
	// question wakes one agent; the others share the org's first users.
	o, err := r.newOrg(ctx, base, "memory", r.cfg.Users+asked, false)
	if err != nil {
		return err
	}
	baseRSS, baseG, err := r.settled(p.rss, p.goroutines)
	if err != nil {
		return err
	}
	mem.RSSBaselineMB, mem.GoroutinesBaseline = mb(baseRSS), baseG
	if p.files != nil {
		if mem.OpenFilesIdle, err = p.files(); err != nil {
			return err
		}
	}
	if mem.HeapIdleMB, mem.StackIdleMB, err = p.runtimeMem(); err != nil {
		return err
	}

	r.logf("  connecting %d agents", r.cfg.Waiters)
	sessions := make([]*mcp.ClientSession, r.cfg.Waiters)
	err = parallel(len(sessions), max(r.cfg.Concurrency, 32), func(i int) error {
		tok := o.tokens[i%r.cfg.Users]
		if i < asked {
			tok = o.tokens[r.cfg.Users+i]
		}
		cs, err := r.cl.connect(ctx, base, tok)
		sessions[i] = cs
		return err
	})
	defer closeAll(sessions)
	if err != nil {
		return err
	}
	w := &waiters{returns: make([]chan waitReturn, asked)}
	for i := range w.returns {
		w.returns[i] = make(chan waitReturn, 1)
	}
	defer w.hangUp()
	if err := r.startWaiters(ctx, p, w, sessions); err != nil {
		return err
	}
	r.logf("  %d agents waiting", r.cfg.Waiters)
	if err := p.peak(mem, baseRSS); err != nil {
		return err
	}
	if asked > 0 {
		if mem.Wake, err = r.wake(ctx, p, o, w); err != nil {
			return err
		}
		r.logf("  woke %d of %d asked agents: p50 %.2f ms, p99 %.2f ms, max %.2f ms", mem.Wake.Samples, mem.Wake.Asked, mem.Wake.P50MS, mem.Wake.P99MS, mem.Wake.MaxMS)
	}

	// The agents hang up, as killed or restarted agents do; every server
	// goroutine that served them must end.
	w.hangUp()
	mem.ReturnedEarly = int(w.early.Load())
	mem.FirstError, _ = w.firstErr.Load().(string)
	closeAll(sessions)
	if err := r.afterWaits(p, mem, baseG); err != nil {
		return err
	}
	mem.Note = fmt.Sprintf("each agent has its own MCP session (%s) and waits with timeout_s 120; after the peak reading the agents hang up (their requests are cancelled) and the harness closes its idle connections", r.cfg.Era)
	r.logf("  RSS %.1f MB idle, %.1f MB with %d waiting; goroutines %d, %d, %d after", mem.RSSBaselineMB, mem.RSSWaitingMB, r.cfg.Waiters, baseG, mem.GoroutinesWaiting, mem.GoroutinesAfter)
	return nil
}

// memProbe reads the memory phase's server: its RSS and, from its metrics,
// goroutines, Go's heap and stacks, and how many agents wait; and, when
// asked for, its heap profile (profile) and its CPU profile (cpu starts and
// stops it).
type memProbe struct {
	r           *runner
	ctx         context.Context
	base, token string
	rss         func() (int64, error)
	files       func() (int, error)
	profile     func() error
	cpu         func(start bool) error
}

func (p *memProbe) goroutines() (int, error) {
	m, err := p.r.cl.metrics(p.ctx, p.base, p.token, "go_goroutines")
	return int(m["go_goroutines"]), err
}

// runtimeMem is the heap and the stacks in use, in MB.
func (p *memProbe) runtimeMem() (heap, stack float64, err error) {
	m, err := p.r.cl.metrics(p.ctx, p.base, p.token, "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes")
	return m["go_memstats_heap_inuse_bytes"] / (1 << 20), m["go_memstats_stack_inuse_bytes"] / (1 << 20), err
}

func (p *memProbe) waiting() (int, error) {
	m, err := p.r.cl.metrics(p.ctx, p.base, p.token, "ctalk_waiting_agents")
	return int(m["ctalk_waiting_agents"]), err
}

// peak records the server's memory with every agent waiting, and takes the
// heap profile when one is asked for.
func (p *memProbe) peak(mem *Memory, baseRSS int64) error {
	time.Sleep(500 * time.Millisecond)
	peak, err := p.rss()
	if err != nil {
		return err
	}
	mem.RSSWaitingMB = mb(peak)
	if p.files != nil {
		if mem.OpenFilesWaiting, err = p.files(); err != nil {
			return err
		}
	}
	mem.PerWaiterKB = float64(peak-baseRSS) / 1024 / float64(mem.Waiters)
	if mem.GoroutinesWaiting, err = p.goroutines(); err != nil {
		return err
	}
	if mem.HeapWaitingMB, mem.StackWaitingMB, err = p.runtimeMem(); err != nil {
		return err
	}
	if p.profile != nil {
		return p.profile()
	}
	return nil
}

// waiters are the agents' waiting calls: how many returned before the
// agents hung up, and the first error among them.
type waiters struct {
	wg       sync.WaitGroup
	cancel   context.CancelFunc
	early    atomic.Int64
	firstErr atomic.Value
	// returns[i] receives the return of agent i's wait once questions are
	// being asked (waking is set): the first len(returns) agents are asked.
	returns []chan waitReturn
	waking  atomic.Bool
}

// waitReturn is when a waiting call returned, and with how many questions.
type waitReturn struct {
	at        time.Time
	questions int
	err       error
}

// hangUp cancels every waiting call and waits for them to return.
func (w *waiters) hangUp() {
	if w.cancel != nil {
		w.cancel()
	}
	w.wg.Wait()
}

// startWaiters starts every session's wait_for_inbox, a batch at a time,
// each batch once the last is waiting: thousands of connections opened at
// once overflow the listen queue, and the refused ones time out dialling.
func (r *runner) startWaiters(ctx context.Context, p *memProbe, w *waiters, sessions []*mcp.ClientSession) error {
	wctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	limit := 60*time.Second + time.Duration(len(sessions))*10*time.Millisecond
	n := 0
	for start := 0; start < len(sessions); start += waitBatch {
		batch := sessions[start:min(start+waitBatch, len(sessions))]
		for j, cs := range batch {
			i := start + j
			w.wg.Go(func() {
				m, err := callTool(wctx, cs, "wait_for_inbox", map[string]any{"timeout_s": 120})
				if i < len(w.returns) && w.waking.Load() {
					w.returns[i] <- waitReturn{time.Now(), len(anySlice(m["questions"])), err}
					return
				}
				if wctx.Err() == nil {
					w.early.Add(1)
					if err != nil {
						w.firstErr.CompareAndSwap(nil, err.Error())
					}
				}
			})
		}
		want := start + len(batch)
		err := mcpclient.Poll(ctx, limit, 20*time.Millisecond, func() (bool, error) {
			var err error
			if n, err = p.waiting(); err != nil || w.early.Load() > 0 {
				return true, err
			}
			return n >= want, nil
		})
		if err != nil || n < want {
			w.hangUp()
			msg, _ := w.firstErr.Load().(string)
			return errors.Join(err, fmt.Errorf("only %d of %d agents were waiting (%d calls returned early: %s)", n, len(sessions), w.early.Load(), msg))
		}
	}
	return nil
}

// Wake-up sampling: the asked agents are asked by wakeAskers sessions at
// wakeRate questions a second in all, so that the figure is the wake-up of
// one agent among thousands waiting, not a queue of asks.
const (
	wakeAskers = 4
	wakeRate   = 200
)

// wake asks one question to each of the first len(w.returns) waiting agents,
// within the phase duration, and times each from the start of its ask to the
// return of the agent's wait_for_inbox.
func (r *runner) wake(ctx context.Context, p *memProbe, o *org, w *waiters) (*Wake, error) {
	res := &Wake{Askers: wakeAskers, RatePerSec: wakeRate}
	askers := make([]*mcp.ClientSession, wakeAskers)
	err := parallel(len(askers), len(askers), func(k int) error {
		cs, err := r.cl.connect(ctx, p.base, o.tokens[k%r.cfg.Users])
		askers[k] = cs
		return err
	})
	defer closeAll(askers)
	if err != nil {
		return nil, err
	}
	if p.cpu != nil {
		if err := p.cpu(true); err != nil {
			return nil, err
		}
	}
	// This process holds the clients of every waiting agent, a heap of
	// hundreds of MB: its collector, run during the wake-ups, would delay
	// the clients' reading of their answers and count against the server.
	// It pauses for the few seconds of asks and collects after.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	w.waking.Store(true)
	starts := make([]time.Time, len(w.returns))
	askErrs := make([]error, len(w.returns))
	begin := time.Now()
	deadline := begin.Add(r.cfg.Duration)
	every := time.Second / wakeRate
	var asked atomic.Int64
	parallel(len(askers), len(askers), func(k int) error {
		for i := k; i < len(starts); i += len(askers) {
			at := begin.Add(time.Duration(i) * every)
			if at.After(deadline) || ctx.Err() != nil {
				return nil
			}
			time.Sleep(time.Until(at))
			starts[i] = time.Now()
			asked.Add(1)
			_, askErrs[i] = callTool(ctx, askers[k], "ask_person", map[string]any{"to_user_id": o.users[r.cfg.Users+i], "question": questionText})
		}
		return nil
	})
	res.Asked = int(asked.Load())
	if p.cpu != nil {
		if err := p.cpu(false); err != nil {
			return nil, err
		}
	}
	fail := func(err error) {
		res.Errors++
		if res.FirstError == "" {
			res.FirstError = err.Error()
		}
	}
	var lat []time.Duration
	timeout := time.After(30 * time.Second)
	for i, start := range starts {
		switch {
		case start.IsZero():
			continue
		case askErrs[i] != nil:
			fail(askErrs[i])
			continue
		}
		select {
		case got := <-w.returns[i]:
			switch {
			case got.err != nil:
				fail(got.err)
			case got.questions != 1:
				fail(fmt.Errorf("wait_for_inbox returned %d questions, not the one asked", got.questions))
			default:
				lat = append(lat, got.at.Sub(start))
			}
		case <-timeout:
			fail(fmt.Errorf("agent %d was not woken within 30 s of its question", i))
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	res.Samples = len(lat)
	res.P50MS, res.P99MS, res.MaxMS = quantileMS(lat, 0.50), quantileMS(lat, 0.99), quantileMS(lat, 1)
	return res, nil
}

// afterWaits records the server once the agents have hung up. The
// goroutines may take a moment to end; not ending within 15 s is the
// finding, not an error of the run.
func (r *runner) afterWaits(p *memProbe, mem *Memory, baseG int) error {
	var (
		after      int64
		afterG     int
		settledErr error
	)
	mcpclient.Poll(p.ctx, 15*time.Second, 100*time.Millisecond, func() (bool, error) {
		after, afterG, settledErr = r.settled(p.rss, p.goroutines)
		return settledErr != nil || afterG <= baseG+goroutineSlack, nil
	})
	if settledErr != nil {
		return settledErr
	}
	mem.RSSAfterMB, mem.GoroutinesAfter = mb(after), afterG
	mem.BackToBaseline = afterG <= baseG+goroutineSlack
	// RSS after the agents leave includes memory the Go runtime has freed
	// but not yet returned to the system; the heap in use tells retained
	// memory apart.
	var err error
	mem.HeapAfterMB, _, err = p.runtimeMem()
	return err
}

// settled closes the client's idle connections, so that the server holds no
// connection goroutine for them, and reads RSS and goroutines.
func (r *runner) settled(rss func() (int64, error), goroutines func() (int, error)) (int64, int, error) {
	r.cl.tr.CloseIdleConnections()
	time.Sleep(200 * time.Millisecond)
	g, err := goroutines()
	if err != nil {
		return 0, 0, err
	}
	b, err := rss()
	if err != nil {
		return 0, 0, err
	}
	return b, g, nil
}

func closeAll(sessions []*mcp.ClientSession) {
	parallel(len(sessions), 64, func(i int) error {
		if cs := sessions[i]; cs != nil {
			sessions[i] = nil
			cs.Close()
		}
		return nil
	})
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// raiseFileLimit raises this process's soft limit on open files to its hard
// limit when it is below need: each waiting agent holds a connection, one
// file descriptor on each side.
func raiseFileLimit(need uint64) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return err
	}
	if l.Cur >= need {
		return nil
	}
	l.Cur = min(max(need, l.Cur), l.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return err
	}
	if l.Cur < need {
		return fmt.Errorf("%d waiting agents need about %d open files, and the hard limit is %d: raise it (ulimit -Hn, or LimitNOFILE in systemd)", need-fileSlack, need, l.Max)
	}
	return nil
}

// fileSlack is what a process needs besides one file per waiting agent:
// the database, logs, listeners, other clients.
const fileSlack = 256

// memoryTargets judges the memory of waiting agents and that their
// goroutines end.
func (r *runner) memoryTargets() {
	res := r.res
	rssTarget := Target{Name: fmt.Sprintf("RSS with %s waiting agents <= 1 GiB", count(fullWaiters)), Want: "<= 1024 MB", Status: statusSkipped}
	perTarget := Target{Name: "RSS per waiting agent <= 50 KB", Want: "<= 50 KB", Status: statusSkipped}
	goTarget := Target{Name: "goroutines back to baseline after the waiting agents leave", Want: fmt.Sprintf("<= baseline + %d", goroutineSlack), Status: statusSkipped}
	wakeTarget := Target{Name: fmt.Sprintf("each of %s waiting agents woken within 100 ms p99 of its question", count(fullWaiters)), Want: "<= 100 ms", Status: statusSkipped}
	switch m := res.Memory; {
	case m == nil:
		rssTarget.Note, perTarget.Note, goTarget.Note, wakeTarget.Note = "phase not run", "phase not run", "phase not run", "phase not run"
	case m.Skipped:
		rssTarget.Note, perTarget.Note, goTarget.Note, wakeTarget.Note = m.Note, m.Note, m.Note, m.Note
	default:
		wakeTarget.Note = "-wake-samples 0"
		if wk := m.Wake; wk != nil {
			wakeTarget.Got, wakeTarget.Note = fmt.Sprintf("%.1f ms, %d of %d woken with %d waiting", wk.P99MS, wk.Samples, wk.Asked, m.Waiters), ""
			switch {
			case wk.Samples == 0 || wk.Errors > 0:
				wakeTarget.Status = statusMissed
				wakeTarget.Note = fmt.Sprintf("%d errors; first: %s", wk.Errors, wk.FirstError)
			case m.Waiters >= fullWaiters:
				wakeTarget.Status = pass(wk.P99MS <= 100)
			default:
				wakeTarget.Status, wakeTarget.Note = statusInfo, fmt.Sprintf("not judged: %d waiters measured, the target is for %s", m.Waiters, count(fullWaiters))
			}
		}
		rssTarget.Got = fmt.Sprintf("%.1f MB with %d", m.RSSWaitingMB, m.Waiters)
		perTarget.Got = fmt.Sprintf("%.1f KB with %d", m.PerWaiterKB, m.Waiters)
		if m.Waiters >= fullWaiters {
			rssTarget.Status = pass(m.RSSWaitingMB <= 1024)
		} else {
			rssTarget.Status, rssTarget.Note = statusInfo, fmt.Sprintf("not judged: %d waiters measured, the target is for %s (-waiters %d)", m.Waiters, count(fullWaiters), fullWaiters)
		}
		if m.Waiters >= 1000 {
			perTarget.Status = pass(m.PerWaiterKB <= 50)
		} else {
			perTarget.Status, perTarget.Note = statusInfo, "not judged below 1,000 waiters, where the baseline's noise dominates"
		}
		goTarget.Got = fmt.Sprintf("%d -> %d -> %d", m.GoroutinesBaseline, m.GoroutinesWaiting, m.GoroutinesAfter)
		goTarget.Status = pass(m.BackToBaseline)
	}
	res.Targets = append(res.Targets, perTarget)
	res.Targets = append(res.Targets, rssTarget, goTarget, wakeTarget)

}
