package audit

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recordedInserts stands in for the database in the timing tests, which run
// on synctest's fake clock: it records the size of each batch written and
// when.
type recordedInserts struct {
	mu    sync.Mutex
	sizes []int
	at    []time.Duration
	start time.Time
}

func (r *recordedInserts) store(_ context.Context, batch []Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sizes = append(r.sizes, len(batch))
	r.at = append(r.at, time.Since(r.start))
	return nil
}

func (r *recordedInserts) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sizes)
}

// timedLog is a Log whose writes rec records; it must be made inside the
// synctest bubble, so that its writer runs on the fake clock.
func timedLog(size int) (*Log, *recordedInserts) {
	rec := &recordedInserts{start: time.Now()}
	l := &Log{log: slog.Default(), events: make(chan Event, 8192), done: make(chan struct{}), size: size, store: rec.store}
	go l.write()
	return l, rec
}

// TestBatchWaitsForTheBurst shows that a batch is written once events stop
// for flushDelay, not flushDelay after the first: the calls of a fan-out,
// which end one after another, share one insert after the last.
func TestBatchWaitsForTheBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, rec := timedLog(batchSize)
		defer l.Close()
		const n = 50 // one event a millisecond: 50 ms, within maxDelay
		for range n {
			l.Record(Event{OrgID: "acme", Tool: "wait_for_message", Outcome: "ok"})
			time.Sleep(time.Millisecond)
			synctest.Wait()
			if rec.count() != 0 {
				t.Fatalf("a batch was written %v into a burst of events one a millisecond apart", rec.at[0])
			}
		}
		time.Sleep(flushDelay)
		synctest.Wait()
		if rec.count() != 1 || rec.sizes[0] != n {
			t.Fatalf("after the burst: batches of %v, want one of all %d events", rec.sizes, n)
		}
		if want := time.Duration(n-1)*time.Millisecond + flushDelay; rec.at[0] != want {
			t.Fatalf("written %v after the first event, want %v: flushDelay after the last", rec.at[0], want)
		}
	})
}

// TestBatchBounds shows that a batch is written maxDelay after its first
// event while events keep coming, and at once when it is full.
func TestBatchBounds(t *testing.T) {
	t.Run("maxDelay", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l, rec := timedLog(batchSize)
			defer l.Close()
			for i := 0; time.Duration(i)*time.Millisecond < maxDelay+10*time.Millisecond; i += 2 {
				l.Record(Event{OrgID: "acme", Tool: "t", Outcome: "ok"})
				time.Sleep(2 * time.Millisecond)
			}
			synctest.Wait()
			if rec.count() == 0 || rec.at[0] != maxDelay {
				t.Fatalf("batches written at %v, want the first maxDelay (%v) after its first event", rec.at, maxDelay)
			}
		})
	})
	t.Run("full", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l, rec := timedLog(4)
			defer l.Close()
			for range 6 {
				l.Record(Event{OrgID: "acme", Tool: "t", Outcome: "ok"})
			}
			synctest.Wait()
			if rec.count() != 1 || rec.sizes[0] != 4 || rec.at[0] != 0 {
				t.Fatalf("batches of %v at %v, want one full batch of 4 at once", rec.sizes, rec.at)
			}
		})
	})
}

// TestCloseDrainsAGatheringBatch shows that Close writes a batch still
// gathering at once, without waiting for the burst to end.
func TestCloseDrainsAGatheringBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, rec := timedLog(batchSize)
		for range 3 {
			l.Record(Event{OrgID: "acme", Tool: "t", Outcome: "ok"})
		}
		l.Close()
		if rec.count() != 1 || rec.sizes[0] != 3 || rec.at[0] != 0 {
			t.Fatalf("Close: batches of %v at %v, want the 3 events written at once", rec.sizes, rec.at)
		}
	})
}
