package app

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestWorkersStopWaits: Stop returns once every piece of work has
// returned, not merely been told to stop; one that does not return is
// named in the log when the wait ends.
func TestWorkersStopWaits(t *testing.T) {
	var logs bytes.Buffer
	w := newWorkers(slog.New(slog.NewTextHandler(&logs, nil)))
	var finished, alsoDone atomic.Bool
	w.Go("slow to finish", func(ctx context.Context) {
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // the last write of a worker
		finished.Store(true)
	})
	w.Go("quick", func(ctx context.Context) { <-ctx.Done() })
	w.Stop(context.Background(), func() { alsoDone.Store(true) })
	if !finished.Load() || !alsoDone.Load() {
		t.Fatal("Stop returned before the work did")
	}
	if got := w.names(); len(got) != 0 {
		t.Errorf("still running after Stop: %v", got)
	}

	logs.Reset()
	w = newWorkers(slog.New(slog.NewTextHandler(&logs, nil)))
	release := make(chan struct{})
	defer close(release)
	w.Go("stuck", func(context.Context) { <-release })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	w.Stop(ctx)
	if !strings.Contains(logs.String(), "stuck") {
		t.Errorf("the log does not name the work still running:\n%s", logs.String())
	}
}
