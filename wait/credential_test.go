package wait_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/wait"
)

// TestHoldEndsWhatARevokedCredentialHolds: many waits held at once for
// credentials of two users, while one user's credential is revoked and
// announced concurrently, again and again: every hold of the revoked
// credential ends with its refusal, each credential is checked once per
// announcement however many holds share it, and the other user's and the
// same user's other credential's holds stay open.
func TestHoldEndsWhatARevokedCredentialHolds(t *testing.T) {
	for round := range 50 {
		b := wait.NewBroker()
		var revoked atomic.Bool
		var checks atomic.Int64
		cred := func(user, id string) *wait.Credential {
			return &wait.Credential{OrgID: "acme", UserID: user, ID: id, Seen: b.Revocations(), Check: func(context.Context) error {
				checks.Add(1)
				if id == "bob-1" && revoked.Load() {
					return ctalk.Errorf(ctalk.EUnauthorized, "the auth token was revoked")
				}
				return nil
			}}
		}
		creds := []*wait.Credential{cred("bob", "bob-1"), cred("bob", "bob-2"), cred("alice", "alice-1")}
		const each = 20
		var ctxs [3][]context.Context
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i, c := range creds {
			for range each {
				wg.Go(func() {
					ctx, release := b.Hold(context.Background(), c)
					t.Cleanup(release)
					mu.Lock()
					ctxs[i] = append(ctxs[i], ctx)
					mu.Unlock()
				})
			}
		}
		wg.Wait()
		revoked.Store(true)
		var announce sync.WaitGroup
		for range 3 {
			announce.Go(func() { b.Revoked("acme", "bob") })
		}
		announce.Wait()
		for _, ctx := range ctxs[0] {
			select {
			case <-ctx.Done():
				if err := wait.Refused(ctx); ctalk.ErrorCode(err) != ctalk.EUnauthorized {
					t.Fatalf("round %d: a hold of the revoked credential ended with %v", round, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: a hold of the revoked credential did not end", round)
			}
		}
		for i, name := range []string{"", "bob's other credential", "alice's credential"} {
			if i == 0 {
				continue
			}
			for _, ctx := range ctxs[i] {
				if ctx.Err() != nil {
					t.Fatalf("round %d: a hold of %s ended", round, name)
				}
			}
		}
		// Three announcements, two of bob's credentials: at most six
		// checks (fewer once the revoked one's holds are released), never
		// one per hold.
		if n := checks.Load(); n > 6 {
			t.Fatalf("round %d: %d checks for 3 announcements of 2 credentials", round, n)
		}
	}
}

// TestHoldChecksARevocationItMissed: a credential checked before a
// revocation that was announced before its hold began is checked at once.
func TestHoldChecksARevocationItMissed(t *testing.T) {
	b := wait.NewBroker()
	c := &wait.Credential{OrgID: "acme", UserID: "bob", ID: "t", Seen: b.Revocations(), Check: func(context.Context) error {
		return ctalk.Errorf(ctalk.EUnauthorized, "revoked")
	}}
	b.Revoked("acme", "bob")
	ctx, release := b.Hold(context.Background(), c)
	defer release()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a hold that missed its credential's revocation did not end")
	}
	// One checked after the revocation is not checked again.
	fresh := &wait.Credential{OrgID: "acme", UserID: "bob", ID: "u", Seen: b.Revocations(), Check: func(context.Context) error {
		return fmt.Errorf("checked")
	}}
	ctx, release = b.Hold(context.Background(), fresh)
	defer release()
	if ctx.Err() != nil {
		t.Fatal("a hold checked after the last revocation ended")
	}
}

// TestWaitHandsNothingOverWhileItsCredentialIsChecked: a wait that finds
// something while the check its user's revocation started is still running
// waits for that check, and, the credential refused, hands nothing over.
func TestWaitHandsNothingOverWhileItsCredentialIsChecked(t *testing.T) {
	for range 20 {
		b := wait.NewBroker()
		release := make(chan struct{})
		c := &wait.Credential{OrgID: "acme", UserID: "bob", ID: "t", Seen: b.Revocations(), Check: func(context.Context) error {
			<-release
			return ctalk.Errorf(ctalk.EUnauthorized, "revoked")
		}}
		checking, announced := make(chan struct{}), make(chan struct{})
		go func() {
			<-checking
			b.Revoked("acme", "bob")
			close(announced)
			// The credential's check outlasts the wait's own.
			time.AfterFunc(20*time.Millisecond, func() { close(release) })
		}()
		err := b.For(context.Background(), "acme", wait.Key("bob"), wait.Options{Timeout: time.Minute, Credential: c}, func() (bool, error) {
			// The revocation is announced while the wait checks.
			close(checking)
			<-announced
			return true, nil
		})
		if ctalk.ErrorCode(err) != ctalk.EUnauthorized {
			t.Fatalf("a wait that found something as its credential was revoked returned %v; want the refusal", err)
		}
	}
}
