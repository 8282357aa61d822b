package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/testkit"
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
	HeapIdleMB         float64 `json:"heap_inuse_idle_mb"`
	HeapWaitingMB      float64 `json:"heap_inuse_waiting_mb"`
	HeapAfterMB        float64 `json:"heap_inuse_after_mb"`
	StackIdleMB        float64 `json:"stack_inuse_idle_mb"`
	StackWaitingMB     float64 `json:"stack_inuse_waiting_mb"`
	GoroutinesBaseline int     `json:"goroutines_baseline"`
	GoroutinesWaiting  int     `json:"goroutines_waiting"`
	GoroutinesAfter    int     `json:"goroutines_after"`
	BackToBaseline     bool    `json:"goroutines_back_to_baseline"`
	ReturnedEarly      int     `json:"waits_returned_early"`
	FirstError         string  `json:"first_error,omitempty"`
	Skipped            bool    `json:"skipped,omitempty"`
	Note               string  `json:"note,omitempty"`
}

// waitBatch is how many agents start waiting at once in the memory phase.
const waitBatch = 500

// goroutineSlack is how many goroutines above the baseline still count as
// back to it: the runtime and the database pool come and go.
const goroutineSlack = 5

// memoryTarget says which server the memory phase measures and how: a child
// server process it starts (stopped by stop), or the -url target through its
// /metrics; with neither, it marks the phase skipped.
func (r *runner) memoryTarget(ctx context.Context, mem *Memory) (base, token string, rss func() (int64, error), profile func() error, stop func(), err error) {
	if r.primary == nil {
		if r.cfg.MetricsToken == "" {
			mem.Skipped, mem.Note = true, "with -url, the target's memory is read from /metrics; pass -metrics-token"
			return
		}
		base, token = r.url, r.cfg.MetricsToken
		rss = func() (int64, error) {
			m, err := r.cl.metrics(ctx, base, token, "process_resident_memory_bytes")
			return int64(m["process_resident_memory_bytes"]), err
		}
		mem.Mode = "the target's process, through its /metrics (the baseline includes whatever it already held)"
		return base, token, rss, nil, func() {}, nil
	}
	dbc := r.dbcfg
	if r.engine == db.SQLite {
		dbc.Path = filepath.Join(r.tmp, "memory.db")
	}
	env := childServerEnv(dbc)
	var ch *testkit.Process
	if r.cfg.MemProfile != "" && r.cfg.ServerBin == "" {
		path, err := filepath.Abs(r.cfg.MemProfile)
		if err != nil {
			return "", "", nil, nil, nil, err
		}
		env = append(env, heapProfileEnv+"="+path)
		profile = func() error {
			if err := writeProfiles(ch, path); err != nil {
				return err
			}
			r.note("Heap profile of the memory phase's server with %d agents waiting: %s (goroutines: %s.goroutine).", r.cfg.Waiters, path, path)
			return nil
		}
	}
	if ch, err = startChild(ctx, r.cfg.ServerBin, env, filepath.Join(r.tmp, "memory-server.log")); err != nil {
		return "", "", nil, nil, nil, err
	}
	pid := ch.Cmd.Process.Pid
	what := "this binary re-executed as a server wired like cmd/ctalk"
	if r.cfg.ServerBin != "" {
		what = r.cfg.ServerBin
	}
	mem.Mode = fmt.Sprintf("child process (%s, pid %d, %s); RSS from /proc, goroutines from its /metrics", what, pid, r.engine)
	rss = func() (int64, error) { return rssBytes(pid) }
	return ch.URL, benchMetricsToken, rss, profile, func() { ch.Stop(30 * time.Second) }, nil
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
	if err := raiseFileLimit(uint64(r.cfg.Waiters + fileSlack)); err != nil {
		return err
	}
	base, token, rss, profile, stop, err := r.memoryTarget(ctx, mem)
	if err != nil || mem.Skipped {
		return err
	}
	defer stop()
	p := &memProbe{r: r, ctx: ctx, base: base, token: token, rss: rss}
	o, err := r.newOrg(ctx, base, "memory", r.cfg.Users, false)
	if err != nil {
		return err
	}
	baseRSS, baseG, err := r.settled(rss, p.goroutines)
	if err != nil {
		return err
	}
	mem.RSSBaselineMB, mem.GoroutinesBaseline = mb(baseRSS), baseG
	if mem.HeapIdleMB, mem.StackIdleMB, err = p.runtimeMem(); err != nil {
		return err
	}

	r.logf("  connecting %d agents", r.cfg.Waiters)
	sessions := make([]*mcp.ClientSession, r.cfg.Waiters)
	err = parallel(len(sessions), max(r.cfg.Concurrency, 32), func(i int) error {
		cs, err := r.cl.connect(ctx, base, o.tokens[i%len(o.tokens)])
		sessions[i] = cs
		return err
	})
	defer closeAll(sessions)
	if err != nil {
		return err
	}
	w := &waiters{}
	defer w.hangUp()
	if err := r.startWaiters(ctx, p, w, sessions); err != nil {
		return err
	}
	r.logf("  %d agents waiting", r.cfg.Waiters)
	if err := p.peak(mem, baseRSS, profile); err != nil {
		return err
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
// goroutines, Go's heap and stacks, and how many agents wait.
type memProbe struct {
	r           *runner
	ctx         context.Context
	base, token string
	rss         func() (int64, error)
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
func (p *memProbe) peak(mem *Memory, baseRSS int64, profile func() error) error {
	time.Sleep(500 * time.Millisecond)
	peak, err := p.rss()
	if err != nil {
		return err
	}
	mem.RSSWaitingMB = mb(peak)
	mem.PerWaiterKB = float64(peak-baseRSS) / 1024 / float64(mem.Waiters)
	if mem.GoroutinesWaiting, err = p.goroutines(); err != nil {
		return err
	}
	if mem.HeapWaitingMB, mem.StackWaitingMB, err = p.runtimeMem(); err != nil {
		return err
	}
	if profile != nil {
		return profile()
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
		for _, cs := range batch {
			w.wg.Go(func() {
				_, err := callTool(wctx, cs, "wait_for_inbox", map[string]any{"timeout_s": 120})
				if wctx.Err() == nil {
					w.early.Add(1)
					if err != nil {
						w.firstErr.CompareAndSwap(nil, err.Error())
					}
				}
			})
		}
		want := start + len(batch)
		err := testkit.Poll(ctx, limit, 20*time.Millisecond, func() (bool, error) {
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

// afterWaits records the server once the agents have hung up. The
// goroutines may take a moment to end; not ending within 15 s is the
// finding, not an error of the run.
func (r *runner) afterWaits(p *memProbe, mem *Memory, baseG int) error {
	var (
		after      int64
		afterG     int
		settledErr error
	)
	testkit.Poll(p.ctx, 15*time.Second, 100*time.Millisecond, func() (bool, error) {
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
