package channels

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db/dbtest"
)

// recordedWrites stands in for the database in the timing tests, which run
// on synctest's fake clock: it records each batch written and when.
type recordedWrites struct {
	mu      sync.Mutex
	batches []map[cursorKey]int64
	at      []time.Duration
	start   time.Time
}

func (r *recordedWrites) store(_ context.Context, batch map[cursorKey]int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, maps.Clone(batch))
	r.at = append(r.at, time.Since(r.start))
	return nil
}

func (r *recordedWrites) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.batches)
}

func timedCursors(start time.Time) (*cursors, *recordedWrites) {
	w := newCursors(nil)
	rec := &recordedWrites{start: start}
	w.store = rec.store
	return w, rec
}

// TestCursorBatchWaitsForTheBurst shows that a batch of read-cursor
// advances is written once the advances stop for cursorDelay, not
// cursorDelay after the first: advances that keep coming, as the waiters of
// a fan-out are answered one after another, share one write after the
// last.
func TestCursorBatchWaitsForTheBurst(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		w, rec := timedCursors(time.Now())
		ctx := dbtest.Operator()
		const n = 20 // one advance a millisecond: 20 ms, within cursorMaxDelay
		for i := range n {
			if err := w.advance(ctx, ctalk.Caller{OrgID: "acme", UserID: fmt.Sprint("u", i)}, "dev", 1); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
			synctest.Wait()
			if got := rec.count(); got != 0 {
				t.Fatalf("a batch was written %v into a burst of advances one a millisecond apart", rec.at[0])
			}
		}
		time.Sleep(cursorDelay)
		synctest.Wait()
		if got := rec.count(); got != 1 || len(rec.batches[0]) != n {
			t.Fatalf("after the burst: %d writes, want one of all %d advances", got, n)
		}
		if want := time.Duration(n-1)*time.Millisecond + cursorDelay; rec.at[0] != want {
			t.Fatalf("written %v after the first advance, want %v: cursorDelay after the last", rec.at[0], want)
		}
	})
}

// TestCursorBatchBound shows that a batch that keeps growing is written
// cursorMaxDelay after its first advance even while advances keep coming,
// so that another replica sees a read at most that late.
func TestCursorBatchBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		w, rec := timedCursors(time.Now())
		ctx := dbtest.Operator()
		bob := ctalk.Caller{OrgID: "acme", UserID: "bob"}
		for seq := int64(1); time.Duration(seq)*time.Millisecond <= cursorMaxDelay+10*time.Millisecond; seq++ {
			if err := w.advance(ctx, bob, "dev", seq); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
		synctest.Wait()
		if rec.count() == 0 {
			t.Fatalf("no batch written within %v of the first advance, while advances kept coming", cursorMaxDelay+10*time.Millisecond)
		}
		if rec.at[0] != cursorMaxDelay {
			t.Fatalf("the first batch was written %v after its first advance, want cursorMaxDelay (%v)", rec.at[0], cursorMaxDelay)
		}
		w.close()
	})
}

// TestCursorBatchDrainedOnClose shows that close writes a batch still
// gathering, at once, and that a timer still due finds nothing left.
func TestCursorBatchDrainedOnClose(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		w, rec := timedCursors(time.Now())
		ctx := dbtest.Operator()
		if err := w.advance(ctx, ctalk.Caller{OrgID: "acme", UserID: "bob"}, "dev", 7); err != nil {
			t.Fatal(err)
		}
		w.close()
		if got := rec.count(); got != 1 || rec.batches[0][cursorKey{"acme", "bob", "dev"}] != 7 || rec.at[0] != 0 {
			t.Fatalf("close: %d writes %v at %v, want bob's advance to 7 written at once", got, rec.batches, rec.at)
		}
		time.Sleep(cursorMaxDelay)
		synctest.Wait()
		if got := rec.count(); got != 1 {
			t.Fatalf("%d writes after close's, want none", got-1)
		}
	})
}
