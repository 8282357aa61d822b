package tools_test

import (
	"strings"
	"testing"
)

// TestSecretsGivenAsIdsAreNeitherEchoedNorAudited passes a token and
// passwords where ids belong: the errors do not repeat them, and the audit
// log records only real ids.
func TestSecretsGivenAsIdsAreNeitherEchoedNorAudited(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		s := e.Org(t, era, "acme")
		bob := s["bob"]
		token := e.Login(t, e.Connect(t, era, ""), "acme", "bob")
		// The last has the shape of an id: only a lookup can tell it from one.
		const idShaped = "pw-shaped-like-an-id"
		secrets := []string{token, " " + token + " ", adminPW, "Hunter22-Long!", idShaped}
		leaks := func(text string) string {
			for _, secret := range secrets {
				for _, form := range []string{secret, strings.TrimSpace(secret), strings.ToLower(strings.TrimSpace(secret))} {
					if strings.Contains(text, form) {
						return form
					}
				}
			}
			return ""
		}
		// The channel tools record the channel argument before any lookup,
		// so that a refused call shows what it aimed at: only touch's id
		// guard keeps a secret out of the record.
		channelTools := map[string]bool{"join_channel": true, "leave_channel": true, "invite_to_channel": true, "update_channel": true, "archive_channel": true}
		for _, secret := range secrets {
			for _, c := range []struct{ tool, arg string }{
				{"withdraw_question", "message_id"},
				{"wait_for_reply", "message_id"},
				{"propose_response", "message_id"},
				{"get_user_profile", "user_id"},
				{"join_channel", "channel"},
				{"leave_channel", "channel"},
				{"invite_to_channel", "channel"},
				{"update_channel", "channel"},
				{"archive_channel", "channel"},
			} {
				args := map[string]any{c.arg: secret}
				switch c.tool {
				case "propose_response":
					args["draft_text"] = "x"
				case "invite_to_channel":
					args["user_ids"] = []string{"carol"}
				}
				res := call(t, bob, c.tool, args)
				if !res.IsError {
					t.Fatalf("%s with %s %q succeeded", c.tool, c.arg, secret)
				}
				// A well-formed user id or channel name may be quoted:
				// nothing tells it from one.
				if leak := leaks(text(res)); leak != "" && !(c.arg != "message_id" && leak == idShaped) {
					t.Fatalf("%s with %s %q: the error %q repeats it", c.tool, c.arg, secret, text(res))
				}
			}
		}
		// Real ids are still recorded. A one-word question has the shape of
		// an id: only what the call resolved tells it from one.
		id := ok(t, bob, "ask_person", map[string]any{"to_user_id": "carol", "question": "deploy"})["message_id"].(string)
		ok(t, bob, "withdraw_question", map[string]any{"message_id": " " + id + " "})
		ok(t, bob, "get_user_profile", map[string]any{"user_id": "Carol"})

		// Two logins, 45 refused calls, then ask, withdraw and profile.
		const calls = 2 + 5*9 + 3
		events := auditEvents(t, s["alice"], "acme", map[string]any{"user_id": "bob", "limit": 200}, calls)
		if len(events) < calls {
			t.Fatalf("%d audit events of bob, want %d", len(events), calls)
		}
		recorded := map[string]string{}
		for _, ev := range events {
			// The one secret shaped like a channel name is recorded as
			// the channel a refused channel call named.
			if leak := leaks(mustJSON(ev["ids"])); leak != "" && !(channelTools[ev["tool"].(string)] && leak == idShaped) {
				t.Fatalf("the audit event %s records the secret %q", mustJSON(ev), leak)
			}
			if ev["outcome"] == "ok" {
				recorded[ev["tool"].(string)] = mustJSON(ev["ids"])
			}
		}
		if recorded["ask_person"] != `["carol","`+id+`"]` || recorded["withdraw_question"] != `["`+id+`"]` || recorded["get_user_profile"] != `["carol"]` {
			t.Fatalf("ids recorded for the successful calls: %v; want carol and %s, %s, and carol", recorded, id, id)
		}
	})
}
