package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// presenceOf reads a user's presence in list_users, get_user_profile and
// get_channel's members, and fails the test when they disagree.
func presenceOf(t *testing.T, cs *mcp.ClientSession, user, channel string) (presence string, lastSeen any) {
	t.Helper()
	var fromList any
	for _, u := range list(ok(t, cs, "list_users", nil), "users") {
		if field(u, "user_id") == user {
			fromList, lastSeen = field(u, "presence"), field(u, "last_seen_at")
		}
	}
	fromProfile := field(ok(t, cs, "get_user_profile", map[string]any{"user_id": user})["user"], "presence")
	var fromMembers any
	for _, m := range list(ok(t, cs, "get_channel", map[string]any{"channel": channel}), "members") {
		if field(m, "user_id") == user {
			fromMembers = field(m, "presence")
		}
	}
	if fromList != fromProfile || fromList != fromMembers {
		// A wait may start or end between the calls: read again.
		return "", nil
	}
	p, _ := fromList.(string)
	return p, lastSeen
}

// eventually waits until user's presence, as cs reads it, is want.
func eventually(t *testing.T, cs *mcp.ClientSession, user, channel, want string) any {
	t.Helper()
	var seen any
	testkit.WaitFor(t, 20*time.Second, user+" "+want, func() (bool, error) {
		p, last := presenceOf(t, cs, user, channel)
		seen = last
		if p != want {
			return false, fmt.Errorf("%s is %q", user, p)
		}
		return true, nil
	})
	return seen
}

func TestPresence(t *testing.T) {
	each(t, func(t *testing.T, e *env, era string) {
		u := e.org(t, era, "acme")
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
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			one := start(t, engine)
			two := start(t, engine, options{sharedWith: one})
			const era = eraStateless
			u := one.org(t, era, "acme")
			ok(t, u["alice"], "create_channel", map[string]any{"channel": "dev", "members": []string{"bob"}})
			bobOnTwo := two.connect(t, era, two.login(t, two.connect(t, era, ""), "acme", "bob"))

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
			aliceOnTwo := two.connect(t, era, two.login(t, two.connect(t, era, ""), "acme", "alice"))
			if p, _ := presenceOf(t, aliceOnTwo, "bob", "dev"); p != "waiting" {
				t.Fatalf("bob, waiting on the first server, reads as %q on the second", p)
			}
			ok(t, u["alice"], "ask_person", map[string]any{"to_user_id": "bob", "question": "still there?"})
			<-long
			eventually(t, aliceOnTwo, "bob", "dev", "active")
		})
	}
}
