package tools_test

import (
	"testing"
)

// TestStepsReachTheAskerWithoutApprovalInHumanMode pins the exception the
// README states: in human approval mode, where no answer leaves without
// the person, an agent's request for information, forward note and
// decline reason still reach the asker at once, as the agent wrote them.
func TestStepsReachTheAskerWithoutApprovalInHumanMode(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		alice, bob, carol := u["alice"], u["bob"], u["carol"]
		ok(t, alice, "update_org_settings", map[string]any{"org_id": "acme", "approval_mode": "human"})
		id := ok(t, bob, "ask_person", map[string]any{"to_user_id": "carol", "question": "Who holds the deploy key?", "ask_anyway": true})["message_id"].(string)

		ok(t, carol, "request_info", map[string]any{"message_id": id, "request": "For staging or production?"})
		up := ok(t, bob, "check_replies", nil)["updates"].([]any)
		if len(up) != 1 || up[0].(map[string]any)["info_request"] != "For staging or production?" {
			t.Fatalf("check_replies updates = %v; want the request at once", up)
		}
		ok(t, bob, "provide_info", map[string]any{"message_id": id, "information": "production"})
		ok(t, carol, "forward_question", map[string]any{"message_id": id, "to_user_id": "alice", "note": "Alice rotated it last"})
		up = ok(t, bob, "check_replies", nil)["updates"].([]any)
		steps, _ := up[0].(map[string]any)["steps"].([]any)
		if len(up) != 1 || len(steps) != 3 || steps[2].(map[string]any)["note"] != "Alice rotated it last" {
			t.Fatalf("check_replies updates = %v; want the forward's note at once", up)
		}
		ok(t, alice, "propose_response", map[string]any{"message_id": id, "draft_text": "I do."})
		fail(t, alice, "send_response", map[string]any{"message_id": id, "final_text": "I do."}, "approv")
		ok(t, alice, "decline_question", map[string]any{"message_id": id, "reason": "Ask the security team."})
		got := ok(t, bob, "check_replies", nil)["replies"].([]any)
		if len(got) != 1 || got[0].(map[string]any)["decline_reason"] != "Ask the security team." {
			t.Fatalf("check_replies = %v; want the decline at once", got)
		}
	})
}
