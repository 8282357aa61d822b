package api_test

import (
	"html"
	"strings"
	"testing"
)

// TestApprovalPageShowsHiddenCharacters sends a question and a draft with
// bidirectional controls and zero-width characters: the approval page shows
// each as a marker and says so, while agents receive the exact text.
func TestApprovalPageShowsHiddenCharacters(t *testing.T) {
	each(t, func(t *testing.T, e *env, era string) {
		u := e.org(t, era, "acme")
		alice, bob := u["alice"], u["bob"]
		ok(t, alice, "update_org_settings", map[string]any{"org_id": "acme", "approval_mode": "human"})
		const question = "Can I deploy \u202Etoday\u202C?"
		const draft = "No\u200B, wait \u2066until\u2069 Monday"
		id := ok(t, alice, "ask_person", map[string]any{"to_user_id": "bob", "question": question})["message_id"].(string)
		inbox := ok(t, bob, "check_inbox", nil)["questions"].([]any)
		if got := inbox[0].(map[string]any)["question"]; got != question {
			t.Fatalf("the recipient's agent got %q, want the exact %q", got, question)
		}
		d := ok(t, bob, "propose_response", map[string]any{"message_id": id, "draft_text": draft})
		if d["draft_text"] != draft {
			t.Fatalf("draft_text = %q, want the exact %q", d["draft_text"], draft)
		}

		// The page escapes the markers' '+' as an HTML entity.
		page := html.UnescapeString(get(t, d["approval_url"].(string)))
		for _, want := range []string{
			"Can I deploy ⟦U+202E⟧today⟦U+202C⟧?",
			"No⟦U+200B⟧, wait ⟦U+2066⟧until⟦U+2069⟧ Monday",
			"Hidden characters shown",
			"5 character(s)",
		} {
			if !strings.Contains(page, want) {
				t.Fatalf("the approval page lacks %q:\n%s", want, page)
			}
		}
		for _, r := range "\u202E\u202C\u200B\u2066\u2069" {
			if strings.ContainsRune(page, r) {
				t.Fatalf("the approval page holds U+%04X as is:\n%s", r, page)
			}
		}

		// Approved as shown, the exact text is what is sent.
		if status, body := decide(t, d["approval_url"].(string), "approve"); status != 200 || !strings.Contains(html.UnescapeString(body), "⟦U+200B⟧") {
			t.Fatalf("approve: %d\n%s", status, body)
		}
		ok(t, bob, "send_response", map[string]any{"message_id": id, "final_text": draft})
		r := ok(t, alice, "wait_for_reply", map[string]any{"message_id": id, "timeout_s": 5})["replies"].([]any)
		if len(r) != 1 || r[0].(map[string]any)["answer"] != draft {
			t.Fatalf("the asker's agent got %v, want the exact %q", r, draft)
		}

		// Plain text carries no notice.
		id2 := ok(t, alice, "ask_person", map[string]any{"to_user_id": "bob", "question": "plain?"})["message_id"].(string)
		page = get(t, ok(t, bob, "propose_response", map[string]any{"message_id": id2, "draft_text": "yes"})["approval_url"].(string))
		if strings.Contains(page, "Hidden characters") || strings.Contains(page, "⟦") {
			t.Fatalf("the page of plain text warns of hidden characters:\n%s", page)
		}
	})
}
