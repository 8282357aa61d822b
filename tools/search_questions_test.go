package tools_test

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// foundQuestions returns the ids of the questions search_messages finds.
func foundQuestions(t *testing.T, cs *mcp.ClientSession, args map[string]any) []string {
	t.Helper()
	out := []string{}
	for _, q := range list(ok(t, cs, "search_messages", args), "questions") {
		out = append(out, field(q, "message_id").(string))
	}
	return out
}

func TestSearchCoversMyQuestionsAndAnswersOnly(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		alice, bob, carol := u["alice"], u["bob"], u["carol"]
		ask := func(from *mcp.ClientSession, to, text string) string {
			return ok(t, from, "ask_person", map[string]any{"to_user_id": to, "question": text})["message_id"].(string)
		}
		answer := func(by *mcp.ClientSession, id, text string) {
			ok(t, by, "propose_response", map[string]any{"message_id": id, "draft_text": text})
			ok(t, by, "send_response", map[string]any{"message_id": id, "final_text": text})
		}
		asked := ask(bob, "alice", "What is the retry logic in alpha-repo? "+strings.Repeat("Some context about the service and its callers. ", 8))
		answer(alice, asked, "Exponential backoff, five attempts.")
		many := ask(alice, "bob", "retry retry retry: which retry budget?")
		others := ask(carol, "bob", "Is the retry budget of beta-repo shared? backoff too?")
		answer(bob, others, "Yes, backoff is shared.")
		pending := ask(carol, "alice", "When is the deploy window?")
		ok(t, alice, "propose_response", map[string]any{"message_id": pending, "draft_text": "zebra crossing at noon"})
		ok(t, alice, "create_channel", map[string]any{"channel": "dev", "members": []string{"bob"}})
		ok(t, bob, "post_message", map[string]any{"channel": "dev", "text": "retry storms again"})

		other := e.Org(t, era, "other")
		ask(other["bob"], "alice", "retry backoff zebra window")

		res := ok(t, alice, "search_messages", map[string]any{"query": "retries"})
		if len(list(res, "messages")) != 1 || mustJSON(foundQuestions(t, alice, map[string]any{"query": "retries"})) != mustJSON([]string{many, asked}) {
			t.Fatalf("alice's search for retries = %v; want the channel message, then %s (more matches) and %s", res, many, asked)
		}
		for _, c := range []struct {
			who  *mcp.ClientSession
			name string
			args map[string]any
			want []string
		}{
			{alice, "an answer I gave", map[string]any{"query": "backoff"}, []string{asked}},
			{bob, "an answer I got", map[string]any{"query": "exponential"}, []string{asked}},
			{carol, "an answer between others", map[string]any{"query": "exponential"}, []string{}},
			{alice, "a question between others", map[string]any{"query": "beta-repo"}, []string{}},
			{alice, "a draft never sent", map[string]any{"query": "zebra"}, []string{}},
			{carol, "a draft to my question, never sent", map[string]any{"query": "zebra"}, []string{}},
			{alice, "a question to me", map[string]any{"query": "deploy window"}, []string{pending}},
			{alice, "with one person", map[string]any{"query": "retry", "from_user_id": "bob"}, []string{many, asked}},
			{alice, "with another person", map[string]any{"query": "window", "from_user_id": "bob"}, []string{}},
			{alice, "after the questions", map[string]any{"query": "retry", "since": "2999-01-01T00:00:00Z"}, []string{}},
			{alice, "before the questions", map[string]any{"query": "retry", "until": "2000-01-01T00:00:00Z"}, []string{}},
			{alice, "in one channel", map[string]any{"query": "retry", "channel": "dev"}, []string{}},
			{other["alice"], "in another org", map[string]any{"query": "exponential"}, []string{}},
		} {
			if got := foundQuestions(t, c.who, c.args); mustJSON(got) != mustJSON(c.want) {
				t.Errorf("%s: found %v, want %v", c.name, got, c.want)
			}
		}
		fail(t, alice, "search_messages", map[string]any{"query": "retry", "from_user_id": "not an id!"}, "invalid")
	})
}
