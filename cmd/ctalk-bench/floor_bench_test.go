package main

import (
	"context"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/mcpclient"
)

// BenchmarkFloor sends the requests of the whoami and inbox phases' wire
// rows (the mcp-go floor's trivial tool, an MCP ping with a token, whoami
// and check_inbox of 10 questions from 10 senders) to the harness's own
// servers, 16 at a time, and reports beside the time per call the CPU time
// per call of the whole process (server, clients and the servers' own
// goroutines: the audit writer, the collector): "cpu-ns/op", which the
// load of other work on a shared machine moves much less than the time.
// Read it with benchstat, old build against new, -count 6 or more.
//
//	go test -run '^$' -bench Floor -benchtime 3s -count 6 ./cmd/ctalk-bench
func BenchmarkFloor(b *testing.B) {
	for _, engine := range dbtest.Engines {
		b.Run(string(engine), func(b *testing.B) {
			cfg := Config{Engine: string(engine), Era: mcpclient.EraSessions, Users: 20, Concurrency: 16,
				MaxRequests: 1 << 40, Phases: map[string]bool{}}
			if engine == "postgres" {
				if cfg.DatabaseURL = os.Getenv("TEST_DATABASE_URL"); cfg.DatabaseURL == "" {
					b.Skip("skipping Postgres: TEST_DATABASE_URL is not set")
				}
			}
			ctx := context.Background()
			r := &runner{cfg: cfg, log: io.Discard, res: &Result{}}
			b.Cleanup(r.close)
			if err := r.start(ctx); err != nil {
				b.Fatal(err)
			}
			r.cl = newClient(cfg.Era, cfg.Concurrency, cfg.Concurrency)
			r.closers = append(r.closers, r.cl.tr.CloseIdleConnections)
			fl, stop, err := startFloors(ctx)
			if err != nil {
				b.Fatal(err)
			}
			r.closers = append(r.closers, stop)
			r.floors = fl
			o, err := r.mainOrg(ctx)
			if err != nil {
				b.Fatal(err)
			}
			floor, err := r.connectAll(ctx, fl.mcp, make([]string, len(o.wire)))
			if err != nil {
				b.Fatal(err)
			}
			floorWire := make([]*mcpclient.Wire, len(floor))
			for i, cs := range floor {
				floorWire[i] = r.cl.wire(fl.mcp, "", cs)
			}
			for _, rw := range []struct {
				name string
				call func(i int) error
			}{
				{"floor", func(i int) error { return floorWire[i%len(floorWire)].Call(ctx, floorTool, nil) }},
				{"ping_token", func(i int) error { return o.wire[i%len(o.wire)].Ping(ctx, true) }},
				{"whoami", func(i int) error { return o.wire[i%len(o.wire)].Call(ctx, "whoami", nil) }},
				{"check_inbox", func(i int) error { return o.wire[i%len(o.wire)].Call(ctx, "check_inbox", nil) }},
			} {
				b.Run(rw.name, func(b *testing.B) {
					// 16 callers on the machine's GOMAXPROCS, as the harness's
					// concurrency 16.
					b.SetParallelism(max(1, cfg.Concurrency/runtime.GOMAXPROCS(0)))
					var callers atomic.Int64
					cpu := processCPU()
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						// Each caller takes its own users in turn.
						for i := int(callers.Add(1)); pb.Next(); i += cfg.Concurrency {
							if err := rw.call(i); err != nil {
								b.Error(err)
								return
							}
						}
					})
					b.StopTimer()
					b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
				})
			}
		})
	}
}

// processCPU is the CPU time, user and system, this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
