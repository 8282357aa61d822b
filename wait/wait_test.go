package wait_test

import (
	"context"
	"testing"
	"time"

	"github.com/ctalk/ctalk/wait"
)

// TestWaitMissesNoKeyThatAppears: a wait on keys that appear while it
// waits (a channel the caller is invited to, announced on their own key)
// misses no wake-up: the invitation is announced while the wait reads its
// keys, before the new key is listened to, and the post to the new channel
// is made right after the wait's check. The wait still finds the post.
func TestWaitMissesNoKeyThatAppears(t *testing.T) {
	b := wait.NewBroker()
	var invited, posted bool
	keys := wait.Keys{Fixed: []string{"bob"}, More: func() ([]string, error) {
		if !invited {
			// Read before the invitation, which commits and wakes bob now.
			invited = true
			b.Wake("acme", "bob")
			return nil, nil
		}
		return []string{"#later"}, nil
	}}
	found := false
	err := b.For(context.Background(), "acme", keys, wait.Options{Timeout: 10 * time.Second, Recheck: time.Hour}, func() (bool, error) {
		if posted {
			found = true
			return true, nil
		}
		// Read before the post, which commits and wakes #later now.
		posted = true
		b.Wake("acme", "#later")
		return false, nil
	})
	if err != nil || !found {
		t.Fatalf("the wait returned %v without the post (a wake-up was lost)", err)
	}
}
