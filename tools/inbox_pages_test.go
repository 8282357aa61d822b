package tools_test

import (
	"testing"
)

// TestCheckInboxShowsSenderChanges checks that a page of check_inbox read
// twice (so kept by the page cache) shows a change of its sender on the
// very next call: orgs tells the inbox of member changes (see app.Assemble).
func TestCheckInboxShowsSenderChanges(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		alice, bob := u["alice"], u["bob"]
		ok(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": "where is the runbook?"})
		sender := func() map[string]any {
			t.Helper()
			qs := ok(t, alice, "check_inbox", nil)["questions"].([]any)
			if len(qs) != 1 {
				t.Fatalf("alice's inbox = %v, want bob's question", qs)
			}
			return qs[0].(map[string]any)["sender"].(map[string]any)
		}
		sender()
		sender()

		ok(t, alice, "update_user_profile_notes", map[string]any{"org_id": "acme", "user_id": "bob", "profile_notes": "on call this week"})
		if s := sender(); s["profile_notes"] != "on call this week" {
			t.Errorf("after update_user_profile_notes, the sender = %v", s)
		}
		sender()
		ok(t, alice, "remove_user", map[string]any{"org_id": "acme", "user_id": "bob"})
		if s := sender(); s["former_member"] != true {
			t.Errorf("after remove_user, the sender = %v", s)
		}
	})
}
