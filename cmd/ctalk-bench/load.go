package main

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// errStop ends a worker: its phase has spent its request budget.
var errStop = errors.New("the phase's request budget is spent")

// budget is the hard cap on the requests (or statements) of one phase.
type budget struct{ left atomic.Int64 }

func newBudget(n int64) *budget {
	b := &budget{}
	b.left.Store(n)
	return b
}

func (b *budget) take() bool { return b.left.Add(-1) >= 0 }

// recorder collects one worker's latencies, per operation.
type recorder struct {
	budget   *budget
	rng      *rand.Rand
	order    []string
	samples  map[string][]time.Duration
	errors   map[string]int
	firstErr map[string]string
}

func newRecorder(b *budget, seed uint64) *recorder {
	return &recorder{budget: b, rng: rand.New(rand.NewPCG(seed, seed*7919+1)),
		samples: map[string][]time.Duration{}, errors: map[string]int{}, firstErr: map[string]string{}}
}

// do times one call of op, charged to the budget. It returns errStop, without
// calling fn, once the budget is spent.
func (r *recorder) do(op string, fn func() error) error {
	if !r.budget.take() {
		return errStop
	}
	start := time.Now()
	err := fn()
	r.add(op, time.Since(start), err)
	return err
}

// add records one call that was timed elsewhere.
func (r *recorder) add(op string, d time.Duration, err error) {
	if _, seen := r.samples[op]; !seen {
		if _, seenErr := r.errors[op]; !seenErr {
			r.order = append(r.order, op)
		}
	}
	if err != nil {
		r.errors[op]++
		if _, ok := r.firstErr[op]; !ok {
			r.firstErr[op] = err.Error()
		}
		return
	}
	r.samples[op] = append(r.samples[op], d)
}

// pick returns a random index below n.
func (r *recorder) pick(n int) int { return r.rng.IntN(n) }

// pair returns two different random indexes below n.
func (r *recorder) pair(n int) (int, int) {
	a := r.rng.IntN(n)
	b := (a + 1 + r.rng.IntN(n-1)) % n
	return a, b
}

// phaseSpec describes one throughput phase.
type phaseSpec struct {
	Phase       string
	Kind        string
	Concurrency int
	Duration    time.Duration
	Budget      int64
	// Label marks the workers' goroutines in CPU profiles.
	Label string
}

// worker is one worker's loop body in a throughput phase.
type worker = func(ctx context.Context, w int, r *recorder) error

// runPhase runs fn in Concurrency workers until Duration passes or the
// budget is spent, and returns the statistics of every operation the workers
// recorded, in the order they first appeared. A call in flight at the end is
// let finish, so the phase lasts a little longer than Duration; throughput
// is computed over the time it really took.
func runPhase(ctx context.Context, p phaseSpec, fn worker) []OpStats {
	recs, elapsed := runWorkers(ctx, p, newBudget(p.Budget), 0, fn)
	return mergeStats(p, elapsed, recs)
}

// rounds is how many turns each row of runRows gets.
const rounds = 5

// runRows runs rows that are compared with each other: each in turn, for a
// fifth of its duration, five times over, so that a change in the load of a
// shared machine weighs on every row alike. It returns each row's statistics
// over all its turns.
func runRows(ctx context.Context, specs []phaseSpec, fns []worker) []OpStats {
	budgets := make([]*budget, len(specs))
	recs := make([][]*recorder, len(specs))
	elapsed := make([]time.Duration, len(specs))
	for i, p := range specs {
		budgets[i] = newBudget(p.Budget)
	}
	for round := range rounds {
		for i, p := range specs {
			p.Duration /= rounds
			rr, el := runWorkers(ctx, p, budgets[i], uint64(round*p.Concurrency), fns[i])
			recs[i], elapsed[i] = append(recs[i], rr...), elapsed[i]+el
		}
	}
	var out []OpStats
	for i, p := range specs {
		out = append(out, mergeStats(p, elapsed[i], recs[i])...)
	}
	return out
}

// runWorkers runs fn in p.Concurrency workers until p.Duration passes or b
// is spent, and returns their recorders and the time it took.
func runWorkers(ctx context.Context, p phaseSpec, b *budget, seed uint64, fn worker) ([]*recorder, time.Duration) {
	recs := make([]*recorder, p.Concurrency)
	for w := range recs {
		recs[w] = newRecorder(b, seed+uint64(w+1))
	}
	start := time.Now()
	deadline := start.Add(p.Duration)
	var wg sync.WaitGroup
	for w := range p.Concurrency {
		wg.Go(func() {
			pprof.Do(ctx, pprof.Labels("side", p.Label), func(ctx context.Context) {
				for time.Now().Before(deadline) && ctx.Err() == nil {
					if err := fn(ctx, w, recs[w]); errors.Is(err, errStop) {
						return
					}
				}
			})
		})
	}
	wg.Wait()
	return recs, time.Since(start)
}

// mergeStats combines the workers' recorders into one OpStats per operation.
func mergeStats(p phaseSpec, elapsed time.Duration, recs []*recorder) []OpStats {
	var order []string
	for _, r := range recs {
		for _, op := range r.order {
			if !slices.Contains(order, op) {
				order = append(order, op)
			}
		}
	}
	out := make([]OpStats, 0, len(order))
	for _, op := range order {
		var all []time.Duration
		st := OpStats{Phase: p.Phase, Op: op, Kind: p.Kind, Concurrency: p.Concurrency, Seconds: elapsed.Seconds()}
		for _, r := range recs {
			all = append(all, r.samples[op]...)
			st.Errors += r.errors[op]
			if st.FirstError == "" {
				st.FirstError = r.firstErr[op]
			}
		}
		st.fill(all, elapsed)
		out = append(out, st)
	}
	return out
}

// OpStats are the throughput and latency of one operation in one phase.
type OpStats struct {
	Phase       string  `json:"phase"`
	Op          string  `json:"op"`
	Kind        string  `json:"kind"`
	Concurrency int     `json:"concurrency"`
	Calls       int     `json:"calls"`
	Errors      int     `json:"errors"`
	FirstError  string  `json:"first_error,omitempty"`
	Seconds     float64 `json:"seconds"`
	PerSecond   float64 `json:"calls_per_second"`
	P50MS       float64 `json:"p50_ms"`
	P95MS       float64 `json:"p95_ms"`
	P99MS       float64 `json:"p99_ms"`
}

// fill sets the counts and quantiles from the samples of successful calls.
func (s *OpStats) fill(ds []time.Duration, elapsed time.Duration) {
	s.Calls = len(ds)
	if elapsed > 0 {
		s.PerSecond = float64(len(ds)) / elapsed.Seconds()
	}
	s.P50MS, s.P95MS, s.P99MS = quantileMS(ds, 0.50), quantileMS(ds, 0.95), quantileMS(ds, 0.99)
}

// quantileMS returns the q quantile (nearest rank) of ds in milliseconds, or
// 0 when there are no samples.
func quantileMS(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	i = min(max(i, 0), len(s)-1)
	return float64(s[i]) / float64(time.Millisecond)
}

// sequential times fn up to n times in a row, for at most d, and returns the
// statistics of op; latency measured without queueing.
func sequential(ctx context.Context, phase, kind, op string, n int, d time.Duration, fn func(ctx context.Context) error) OpStats {
	rec := newRecorder(newBudget(int64(n)), 1)
	start := time.Now()
	deadline := start.Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if err := rec.do(op, func() error { return fn(ctx) }); errors.Is(err, errStop) {
			break
		}
	}
	st := mergeStats(phaseSpec{Phase: phase, Kind: kind, Concurrency: 1}, time.Since(start), []*recorder{rec})
	if len(st) == 0 {
		return OpStats{Phase: phase, Op: op, Kind: kind, Concurrency: 1}
	}
	return st[0]
}
