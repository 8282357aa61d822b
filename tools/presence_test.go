package tools_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

func TestPresence(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		alice, bob := u["alice"], u["bob"]
		ok(t, alice, "create_channel", map[string]any{"channel": "dev", "members": []string{"bob", "carol"}})
		// carol only logged in: no identified call yet.
		if p, last := presenceOf(t, alice, "carol", "dev"); p != "away" || last != nil {
			t.Fatalf("carol, never seen: %q, last seen %v", p, last)
		}
		if last := eventually(t, bob, "alice", "dev", "active"); last == nil {
			t.Fatal("alice is active without a last_seen_at")
		}

		done := make(chan map[string]any, 1)
		go func() { done <- ok(t, bob, "wait_for_message", map[string]any{"timeout_s": 60}) }()
		eventually(t, alice, "bob", "dev", "waiting")
		ok(t, alice, "post_message", map[string]any{"channel": "dev", "text": "wake up"})
		<-done
		eventually(t, alice, "bob", "dev", "active")
	})
}

// TestPresenceAcrossReplicas checks that a wait on one server shows as
// waiting on the other, and that a wait ending on one server does not hide
// one still running on the other.
func TestPresenceAcrossReplicas(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			one := start(t, engine)
			two := start(t, engine, options{SharedWith: one})
			const era = eraStateless
			u := one.Org(t, era, "acme")
			ok(t, u["alice"], "create_channel", map[string]any{"channel": "dev", "members": []string{"bob"}})
			bobOnTwo := two.Connect(t, era, two.Login(t, two.Connect(t, era, ""), "acme", "bob"))

			long := make(chan map[string]any, 1)
			go func() { long <- ok(t, u["bob"], "wait_for_inbox", map[string]any{"timeout_s": 60}) }()
			short := make(chan map[string]any, 1)
			go func() { short <- ok(t, bobOnTwo, "wait_for_reply", map[string]any{"timeout_s": 1}) }()
			<-short
			// Wait until the second server has taken its mark back.
			testkit.WaitFor(t, 20*time.Second, "one wait mark left", func() (bool, error) {
				n := countRows(t, one.DB, `SELECT COUNT(*) FROM presence_waits WHERE org_id = 'acme' AND user_id = 'bob'`)
				if n != 1 {
					return false, fmt.Errorf("%d marks", n)
				}
				return true, nil
			})
			aliceOnTwo := two.Connect(t, era, two.Login(t, two.Connect(t, era, ""), "acme", "alice"))
			if p, _ := presenceOf(t, aliceOnTwo, "bob", "dev"); p != "waiting" {
				t.Fatalf("bob, waiting on the first server, reads as %q on the second", p)
			}
			ok(t, u["alice"], "ask_person", map[string]any{"to_user_id": "bob", "question": "still there?"})
			<-long
			eventually(t, aliceOnTwo, "bob", "dev", "active")
		})
	}
}
