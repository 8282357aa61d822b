package api_test

import (
	"testing"
)

// TestCheckRepliesCursor pages check_replies through MCP with its cursor:
// one page has no next_cursor and has_more false, and a cursor the server
// did not issue is refused.
func TestCheckRepliesCursor(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		s := e.Org(t, era, "acme")
		q := ok(t, s["alice"], "ask_person", map[string]any{"to_user_id": "bob", "question": "retry logic?"})
		ok(t, s["bob"], "decline_question", map[string]any{"message_id": q["message_id"], "reason": "ask carol"})
		got := ok(t, s["alice"], "check_replies", map[string]any{})
		if len(got["replies"].([]any)) != 1 || got["has_more"] != false || got["next_cursor"] != nil || got["next_since"] != nil {
			t.Fatalf("check_replies = %s; want one reply and no next page", mustJSON(got))
		}
		fail(t, s["alice"], "check_replies", map[string]any{"cursor": "not-a-cursor"}, "cursor is not one this server issued")
	})
}
