package tools_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

// TestAwayForwardAndFollowUpOverMCP: an away person is not asked unless
// the asker insists (a retry of a question asked before gets it), and
// find_expert says so; the recipient forwards, the new one asks for more
// information, the asker's agent learns both and replies; the answer comes
// back and a follow-up carries the thread. Another org's ids are not found.
func TestAwayForwardAndFollowUpOverMCP(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		z := e.Org(t, era, "zeta")
		alice, bob, carol := u["alice"], u["bob"], u["carol"]
		until := time.Now().Add(48 * time.Hour)
		before := ok(t, bob, "ask_person", map[string]any{"to_user_id": "carol", "question": "before you leave, the deploy key?", "idempotency_key": "k-before"})["message_id"]
		if _, err := e.Orgs.SetAway(dbtest.Operator(), ctalk.Caller{OrgID: "acme", UserID: "carol"}, orgs.Away{Until: until, Delegate: "alice", Note: "at a conference"}); err != nil {
			t.Fatal(err)
		}
		res := ok(t, bob, "ask_person", map[string]any{"to_user_id": "carol", "question": "where are the runbooks?"})
		away, _ := res["recipient_away"].(map[string]any)
		if res["status"] != "not_asked" || res["message_id"] != nil || away["delegate_user_id"] != "alice" || away["note"] != "at a conference" {
			t.Fatalf("ask_person to an away person = %v; want not_asked with the delegate", res)
		}
		if retry := ok(t, bob, "ask_person", map[string]any{"to_user_id": "carol", "question": "before you leave, the deploy key?", "idempotency_key": "k-before"}); retry["message_id"] != before {
			t.Fatalf("a retry of a question asked before carol left = %v; want %v", retry, before)
		}
		if p := ok(t, bob, "get_user_profile", map[string]any{"user_id": "carol"})["user"].(map[string]any); p["away"] == nil {
			t.Fatalf("get_user_profile of an away person = %v; want away", p)
		}
		if w := ok(t, carol, "whoami", nil)["user"].(map[string]any); w["away"] == nil {
			t.Fatalf("whoami of an away person = %v; want away", w)
		}
		ex := ok(t, bob, "find_expert", map[string]any{"topic": "carol-repo"})["experts"].([]any)
		if len(ex) == 0 || ex[0].(map[string]any)["user_id"] != "carol" {
			t.Fatalf("find_expert(carol-repo) = %v; want carol first", ex)
		}
		if away, _ := ex[0].(map[string]any)["away"].(map[string]any); away["delegate_user_id"] != "alice" || away["note"] != "at a conference" || away["until"] == nil {
			t.Fatalf("find_expert's away carol = %v; want until, delegate and note", ex[0])
		}
		id := ok(t, bob, "ask_person", map[string]any{"to_user_id": "carol", "question": "where are the runbooks?", "ask_anyway": true})["message_id"].(string)

		fail(t, z["carol"], "forward_question", map[string]any{"message_id": id, "to_user_id": "bob"}, "not found")
		fail(t, carol, "forward_question", map[string]any{"message_id": id, "to_user_id": "bob"}, "asked message")
		if _, err := e.Orgs.SetAway(dbtest.Operator(), ctalk.Caller{OrgID: "acme", UserID: "alice"}, orgs.Away{Until: until}); err != nil {
			t.Fatal(err)
		}
		fq := ok(t, carol, "forward_question", map[string]any{"message_id": id, "to_user_id": "alice", "note": "Alice keeps them"})
		if fq["to_user_id"] != "alice" || !strings.Contains(fq["next_step"].(string), "alice is away") {
			t.Fatalf("forward_question = %v", fq)
		}
		got := ok(t, bob, "wait_for_reply", map[string]any{"message_id": id, "timeout_s": 5})["replies"].([]any)
		if len(got) != 1 || got[0].(map[string]any)["to_user_id"] != "alice" || len(got[0].(map[string]any)["steps"].([]any)) != 1 {
			t.Fatalf("the asker's wait after a forward = %v; want the new recipient and the step", got)
		}
		ok(t, alice, "request_info", map[string]any{"message_id": id, "request": "for which service?"})
		fail(t, alice, "send_response", map[string]any{"message_id": id, "final_text": "x"}, "provide_info")
		up := ok(t, bob, "check_replies", nil)["updates"].([]any)
		if len(up) != 1 || up[0].(map[string]any)["status"] != "needs_info" || up[0].(map[string]any)["info_request"] != "for which service?" {
			t.Fatalf("check_replies updates = %v; want the request for information", up)
		}
		ok(t, bob, "provide_info", map[string]any{"message_id": id, "information": "payments"})
		qs := ok(t, alice, "check_inbox", nil)["questions"].([]any)
		if len(qs) != 1 || len(qs[0].(map[string]any)["steps"].([]any)) != 3 {
			t.Fatalf("check_inbox after the reply = %v; want the question with its three steps", qs)
		}
		ok(t, alice, "propose_response", map[string]any{"message_id": id, "draft_text": "In the ops repo."})
		ok(t, alice, "send_response", map[string]any{"message_id": id, "final_text": "In the ops repo."})
		got = ok(t, bob, "wait_for_reply", map[string]any{"message_id": id, "timeout_s": 5})["replies"].([]any)
		if len(got) != 1 || got[0].(map[string]any)["answer"] != "In the ops repo." {
			t.Fatalf("the answer = %v", got)
		}
		fail(t, bob, "ask_person", map[string]any{"to_user_id": "carol", "question": "and?", "follow_up_of": id, "ask_anyway": true}, "whoever answered")
		ok(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": "which folder?", "follow_up_of": id, "ask_anyway": true})
		qs = ok(t, alice, "check_inbox", nil)["questions"].([]any)
		th, _ := qs[0].(map[string]any)["thread"].([]any)
		if len(qs) != 1 || len(th) != 1 || th[0].(map[string]any)["answer"] != "In the ops repo." {
			t.Fatalf("the follow-up in check_inbox = %v; want its thread", qs)
		}
	})
}
