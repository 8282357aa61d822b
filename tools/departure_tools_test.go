package tools_test

import (
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/orgs"
)

// TestRemoveUserHandsQuestionsToTheDelegate: with departure_questions
// delegate (set by update_org_settings), removing bob forwards each
// question waiting for him to carol, his away delegate: the asker's agent,
// already waiting for the reply, is woken with the move and its note, and
// carol's agent finds it in her inbox; the question carol herself asked
// him cannot go to her and is declined. With bob's delegate removed before
// him, or the setting back to decline, his questions are declined.
func TestRemoveUserHandsQuestionsToTheDelegate(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		ctx := dbtest.Operator()
		u := e.Org(t, era, "acme")
		alice, bob, carol := u["alice"], u["bob"], u["carol"]
		fail(t, alice, "update_org_settings", map[string]any{"org_id": "acme", "departure_questions": "forward"}, "departure_questions is not valid")
		org := ok(t, alice, "update_org_settings", map[string]any{"org_id": "acme", "departure_questions": "delegate"})
		if org["departure_questions"] != "delegate" {
			t.Fatalf("update_org_settings = %v", org)
		}
		if _, err := e.Orgs.SetAway(ctx, ctalk.Caller{OrgID: "acme", UserID: "bob"}, orgs.Away{Until: time.Now().Add(time.Hour), Delegate: "carol"}); err != nil {
			t.Fatal(err)
		}
		toBob := ok(t, alice, "ask_person", map[string]any{"to_user_id": "bob", "question": "who owns the deploy?", "ask_anyway": true})["message_id"].(string)
		fromCarol := ok(t, carol, "ask_person", map[string]any{"to_user_id": "bob", "question": "is the freeze on?", "ask_anyway": true})["message_id"].(string)
		ok(t, bob, "propose_response", map[string]any{"message_id": toBob, "draft_text": "bob's words, never approved by carol"})

		waited := make(chan map[string]any, 1)
		go func() { waited <- ok(t, alice, "wait_for_reply", map[string]any{"message_id": toBob, "timeout_s": 30}) }()
		waitForWaiters(t, e, 1)
		admin := e.Connect(t, era, e.Login(t, alice, "acme", "alice"))
		res := ok(t, admin, "remove_user", map[string]any{"org_id": "acme", "user_id": "bob"})
		if res["questions_delegated"] != float64(1) || res["questions_declined"] != float64(1) {
			t.Fatalf("remove_user = %v; want one delegated, one declined", res)
		}
		var w map[string]any
		select {
		case w = <-waited:
		case <-time.After(20 * time.Second):
			t.Fatal("the asker's wait_for_reply was not woken by the move")
		}
		replies := list(w, "replies")
		if len(replies) != 1 || field(replies[0], "to_user_id") != "carol" || field(replies[0], "status") != "pending" {
			t.Fatalf("the asker's wait after bob left = %v; want the question, pending, now carol's", w)
		}
		steps, _ := field(replies[0], "steps").([]any)
		if len(steps) != 1 || field(steps[0], "kind") != "forwarded" || field(steps[0], "by_user_id") != "bob" || field(steps[0], "to_user_id") != "carol" {
			t.Fatalf("the move's step = %v", steps)
		}
		qs := list(ok(t, carol, "check_inbox", nil), "questions")
		if len(qs) != 1 || field(qs[0], "message_id") != toBob {
			t.Fatalf("carol's inbox = %v; want alice's question", qs)
		}
		if d := field(qs[0], "latest_draft"); d != nil {
			t.Errorf("bob's draft came with the question: %v", d)
		}
		r := list(ok(t, carol, "check_replies", nil), "replies")
		if len(r) != 1 || field(r[0], "message_id") != fromCarol || field(r[0], "status") != "declined" || field(r[0], "decline_reason") != inbox.DepartedReason {
			t.Fatalf("carol's own question to bob = %v; want it declined", r)
		}

		// dan's delegate, carol, leaves first: his question is declined.
		if _, err := e.Orgs.AddUser(ctx, "acme", orgs.NewUser{ID: "dan", Name: "Dan", Password: "dans-password-1", Role: orgs.RoleMember}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Orgs.SetAway(ctx, ctalk.Caller{OrgID: "acme", UserID: "dan"}, orgs.Away{Until: time.Now().Add(time.Hour), Delegate: "carol"}); err != nil {
			t.Fatal(err)
		}
		toDan := ok(t, alice, "ask_person", map[string]any{"to_user_id": "dan", "question": "the on-call rota?", "ask_anyway": true})["message_id"].(string)
		ok(t, admin, "remove_user", map[string]any{"org_id": "acme", "user_id": "carol"})
		res = ok(t, admin, "remove_user", map[string]any{"org_id": "acme", "user_id": "dan"})
		if res["questions_delegated"] != float64(0) || res["questions_declined"] != float64(1) {
			t.Fatalf("removing dan after his delegate = %v; want his question declined", res)
		}
		got := ok(t, alice, "wait_for_reply", map[string]any{"message_id": toDan, "timeout_s": 5})
		if r := list(got, "replies"); len(r) != 1 || field(r[0], "status") != "declined" {
			t.Fatalf("alice's question to dan = %v", got)
		}
	})
}
