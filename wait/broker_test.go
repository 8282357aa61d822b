package wait_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ctalk/ctalk/wait"
)

// TestRecheckEvery: the safety re-checks of one process's waiting agents
// stay under 200 a second together however many wait, and agents that start
// waiting together are spread instead of re-checking together.
func TestRecheckEvery(t *testing.T) {
	b := wait.NewBroker()
	every := 10 * time.Second
	for _, waiting := range []int{0, 1, 2000, 10000} {
		for n := b.Waiting(); n < waiting; n++ {
			_, cancel := b.Subscribe("acme", fmt.Sprint("u", n))
			t.Cleanup(cancel)
		}
		base := max(every, time.Duration(waiting)*time.Second/200)
		seen := map[time.Duration]bool{}
		for range 100 {
			d := b.RecheckEvery(every)
			if d < base*3/4 || d > base*5/4 {
				t.Fatalf("with %d waiting: re-check after %s, want from %s to %s", waiting, d, base*3/4, base*5/4)
			}
			seen[d] = true
		}
		if len(seen) < 50 {
			t.Errorf("with %d waiting: %d distinct intervals in 100, want them spread", waiting, len(seen))
		}
	}
}
