package app

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/ctalk/ctalk"
)

// stopWait bounds how long Close waits for the background work to return
// when its context sets no sooner deadline.
const stopWait = 10 * time.Second

// workers is an Assembly's background work: each piece runs under its
// name until Close, which cancels them all and waits for every one to
// return before the caller closes the database, so that none writes to a
// closed one.
type workers struct {
	ctx    context.Context
	cancel context.CancelFunc
	log    *slog.Logger
	wg     sync.WaitGroup
	mu     sync.Mutex
	// running are the names of the pieces still running.
	running map[string]int
}

func newWorkers(log *slog.Logger) *workers {
	ctx, cancel := context.WithCancel(context.Background())
	return &workers{ctx: ctx, cancel: cancel, log: log, running: map[string]int{}}
}

// Go runs fn in a goroutine of its own until the workers stop, in the
// operator's scope, which crosses organizations under row-level security;
// fn must return soon after its context ends.
func (w *workers) Go(name string, fn func(ctx context.Context)) {
	w.mu.Lock()
	w.running[name]++
	w.mu.Unlock()
	w.wg.Go(func() {
		defer func() {
			w.mu.Lock()
			if w.running[name]--; w.running[name] == 0 {
				delete(w.running, name)
			}
			w.mu.Unlock()
			w.log.Debug("background work stopped", "worker", name)
		}()
		// Background work serves every organization: its statements run
		// in the operator's scope, named after it (see ctalk.AsOperator).
		fn(ctalk.AsOperator(w.ctx, "worker: "+name))
	})
}

// Stop cancels every piece of work and waits until all have returned, and
// each of also (work begun elsewhere, such as mails sent after an answer),
// or until ctx ends or stopWait passes, when it logs those still running.
func (w *workers) Stop(ctx context.Context, also ...func()) {
	w.cancel()
	done := make(chan struct{})
	go func() {
		w.wg.Wait()
		for _, wait := range also {
			wait()
		}
		close(done)
	}()
	ctx, cancel := context.WithTimeout(ctx, stopWait)
	defer cancel()
	select {
	case <-done:
	case <-ctx.Done():
		w.log.Warn("background work still running at shutdown", "workers", w.names())
	}
}

// names are the pieces still running, sorted.
func (w *workers) names() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for n := range w.running {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
