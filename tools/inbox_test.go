package tools_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
)

func TestQuestionAndAnswerFlow(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		bob, alice := u["bob"], u["alice"]
		ok(t, bob, "update_my_notes", map[string]any{"notes": "I run the payments service"})

		ask := ok(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": "What is the retry logic in alpha-repo?"})
		id := ask["message_id"].(string)
		if ask["status"] != "pending" || ask["to_user_id"] != "alice" || ask["created_at"] == nil {
			t.Fatalf("ask_person = %v", ask)
		}

		inbox := ok(t, alice, "check_inbox", nil)
		qs := inbox["questions"].([]any)
		if len(qs) != 1 {
			t.Fatalf("check_inbox: %d questions, want 1", len(qs))
		}
		q := qs[0].(map[string]any)
		sender := q["sender"].(map[string]any)
		if q["message_id"] != id || q["question"] != "What is the retry logic in alpha-repo?" || sender["user_id"] != "bob" ||
			sender["name"] != "Bob" || sender["notes"] != "I run the payments service" || mustJSON(sender["ownership"]) != `["bob-repo"]` {
			t.Fatalf("inbox item = %v", q)
		}
		if _, ok := q["history_with_sender"].(map[string]any); !ok {
			t.Fatalf("inbox item has no history: %v", q)
		}

		draft := ok(t, alice, "propose_response", map[string]any{"message_id": id, "draft_text": "Three retries with backoff."})
		if draft["version"] != float64(1) || !strings.Contains(draft["next_step"].(string), "approve") {
			t.Fatalf("propose_response = %v", draft)
		}
		sent := ok(t, alice, "send_response", map[string]any{"message_id": id, "final_text": "  Three retries with backoff.\n"})
		if sent["status"] != "answered" {
			t.Fatalf("send_response = %v", sent)
		}

		got := ok(t, bob, "wait_for_reply", map[string]any{"message_id": id, "timeout_s": 5})
		replies := got["replies"].([]any)
		if len(replies) != 1 || replies[0].(map[string]any)["answer"] != "Three retries with backoff." || replies[0].(map[string]any)["resolved_by"] != "alice" {
			t.Fatalf("wait_for_reply = %v", got)
		}
		cr := ok(t, bob, "check_replies", map[string]any{"since": "2000-01-01T01:00:00+01:00"})
		if r := cr["replies"].([]any); len(r) != 1 || r[0].(map[string]any)["message_id"] != id {
			t.Fatalf("check_replies = %v", cr)
		}
		future := time.Now().Add(time.Hour).Format(time.RFC3339)
		if r := ok(t, bob, "check_replies", map[string]any{"since": future})["replies"].([]any); len(r) != 0 {
			t.Fatalf("check_replies since the future = %v", r)
		}
		fail(t, bob, "check_replies", map[string]any{"since": "yesterday"}, "RFC 3339")

		// The history now shows the exchange to the next question's recipient.
		id2 := ok(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": "And the timeout?"})["message_id"].(string)
		q = ok(t, alice, "check_inbox", nil)["questions"].([]any)[0].(map[string]any)
		h := q["history_with_sender"].(map[string]any)
		if q["message_id"] != id2 || h["questions_they_asked_you"] != float64(2) || len(h["recent_exchanges"].([]any)) != 1 {
			t.Fatalf("history = %v", h)
		}
		prof := ok(t, alice, "get_user_profile", map[string]any{"user_id": "bob"})["interaction_with_you"].(map[string]any)
		if prof["questions_they_asked_you"] != float64(2) || prof["last_interaction"] == nil {
			t.Fatalf("profile interaction = %v", prof)
		}
	})
}

func TestApprovalRules(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		bob, alice, carol := u["bob"], u["alice"], u["carol"]
		id := ok(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": "q1"})["message_id"].(string)

		fail(t, alice, "send_response", map[string]any{"message_id": id, "final_text": "yes"}, "no proposed draft")
		fail(t, bob, "propose_response", map[string]any{"message_id": id, "draft_text": "I answer myself"}, "only alice")
		fail(t, carol, "propose_response", map[string]any{"message_id": id, "draft_text": "x"}, "not found")

		ok(t, alice, "propose_response", map[string]any{"message_id": id, "draft_text": "v1"})
		ok(t, alice, "propose_response", map[string]any{"message_id": id, "draft_text": "v2"})
		fail(t, alice, "send_response", map[string]any{"message_id": id, "final_text": "v1"}, "not the latest proposed draft")
		fail(t, alice, "send_response", map[string]any{"message_id": id, "final_text": "v2 edited"}, "not the latest proposed draft")
		fail(t, bob, "send_response", map[string]any{"message_id": id, "final_text": "v2"}, "only alice")
		fail(t, carol, "send_response", map[string]any{"message_id": id, "final_text": "v2"}, "not found")
		ok(t, alice, "send_response", map[string]any{"message_id": id, "final_text": "v2"})
		// A retry of the send is told it was sent, and sends nothing more.
		if again := ok(t, alice, "send_response", map[string]any{"message_id": id, "final_text": "v2"}); !strings.HasPrefix(again["next_step"].(string), "already sent, nothing sent twice") {
			t.Fatalf("send_response again = %v", again)
		}
		fail(t, alice, "send_response", map[string]any{"message_id": id, "final_text": "v3"}, `already answered, and nothing more can be sent for it; this answer was sent at `)
		fail(t, alice, "propose_response", map[string]any{"message_id": id, "draft_text": "v3"}, "already answered")
		fail(t, alice, "decline_question", map[string]any{"message_id": id, "reason": "no"}, "already answered")

		// Decline and withdraw reach the other side.
		id2 := ok(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": "q2"})["message_id"].(string)
		fail(t, bob, "decline_question", map[string]any{"message_id": id2, "reason": "no"}, "only alice")
		ok(t, alice, "decline_question", map[string]any{"message_id": id2, "reason": "ask carol, she owns it"})
		r := ok(t, bob, "wait_for_reply", map[string]any{"message_id": id2, "timeout_s": 2})["replies"].([]any)
		if len(r) != 1 || r[0].(map[string]any)["status"] != "declined" || r[0].(map[string]any)["decline_reason"] != "ask carol, she owns it" {
			t.Fatalf("declined reply = %v", r)
		}
		id3 := ok(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": "q3"})["message_id"].(string)
		ok(t, alice, "check_inbox", nil)
		fail(t, alice, "withdraw_question", map[string]any{"message_id": id3}, "only bob")
		ok(t, bob, "withdraw_question", map[string]any{"message_id": id3})
		w := ok(t, alice, "wait_for_inbox", map[string]any{"timeout_s": 2})
		if wd := w["withdrawn"].([]any); len(wd) != 1 || wd[0].(map[string]any)["message_id"] != id3 {
			t.Fatalf("wait_for_inbox after withdrawal = %v", w)
		}
		fail(t, alice, "send_response", map[string]any{"message_id": id3, "final_text": "x"}, "already withdrawn")
	})
}

// TestHumanApproval: in human mode an answer is sent only once the person
// approved its exact draft in the web app, signed in, and their approval
// sends it; the approval_url leads there and approves nothing by itself.
// The agent's send_response of the text sent afterwards sends nothing
// more; of any other text, it is refused with the answer sent quoted.
func TestHumanApproval(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		bob, alice := u["bob"], u["alice"]
		fail(t, bob, "update_org_settings", map[string]any{"org_id": "acme", "approval_mode": "human"}, "only org admins")
		set := ok(t, alice, "update_org_settings", map[string]any{"org_id": "acme", "approval_mode": "human"})
		if set["approval_mode"] != "human" {
			t.Fatalf("update_org_settings = %v", set)
		}
		// bob in the web app, signed in: the service the app's forms call.
		person := inbox.NewService(e.DB, inbox.DefaultConfig(), e.Broker)
		ctx := ctalk.WithOrg(dbtest.Operator(), "acme")

		id := ok(t, alice, "ask_person", map[string]any{"to_user_id": "bob", "question": "Is <b>prod</b> frozen?"})["message_id"].(string)
		d1 := ok(t, bob, "propose_response", map[string]any{"message_id": id, "draft_text": "v1"})
		if link := d1["approval_url"]; link != e.URL+"/inbox/"+id+"#v1" || d1["approved_by_person"] != false {
			t.Fatalf("propose_response = %v, want approval_url %s/inbox/%s#v1", d1, e.URL, id)
		}
		fail(t, bob, "send_response", map[string]any{"message_id": id, "final_text": "v1"}, "not approved yet")

		// The link alone approves nothing: fetched, it asks for sign-in;
		// the app's approve form, posted without a session, is refused.
		if page := get(t, d1["approval_url"].(string)); !strings.Contains(page, `name="next" value="/inbox/`+id+`"`) {
			t.Fatalf("the approval_url without a session is not the sign-in page:\n%s", page)
		}
		if status, _ := postForm(t, e.URL+"/inbox/"+id+"/approve", url.Values{"version": {"1"}}); status != http.StatusForbidden {
			t.Fatalf("approve without a session: status %d, want 403", status)
		}
		fail(t, bob, "send_response", map[string]any{"message_id": id, "final_text": "v1"}, "not approved yet")

		// A newer draft supersedes the first: approving the first changes nothing.
		ok(t, bob, "propose_response", map[string]any{"message_id": id, "draft_text": "v2"})
		if _, err := person.Approve(ctx, ctalk.Caller{OrgID: "acme", UserID: "bob"}, id, 1); ctalk.ErrorCode(err) != ctalk.EConflict {
			t.Fatalf("approve a superseded draft: %v", err)
		}
		fail(t, bob, "send_response", map[string]any{"message_id": id, "final_text": "v2"}, "not approved yet")
		if _, err := person.Approve(ctx, ctalk.Caller{OrgID: "acme", UserID: "bob"}, id, 2); err != nil {
			t.Fatal(err)
		}
		if replies := ok(t, alice, "check_replies", nil)["replies"].([]any); len(replies) != 1 || replies[0].(map[string]any)["answer"] != "v2" {
			t.Fatalf("the asker's replies after the approval = %v", replies)
		}
		fail(t, bob, "send_response", map[string]any{"message_id": id, "final_text": "v2 but edited"}, `is already answered, and nothing more can be sent for it; this answer was sent at `)
		fail(t, bob, "send_response", map[string]any{"message_id": id, "final_text": "v2 but edited"}, `: "v2"`)
		again := ok(t, bob, "send_response", map[string]any{"message_id": id, "final_text": "v2"})
		if again["status"] != "answered" || again["answer"] != "v2" || again["sharing"] != nil || !strings.HasPrefix(again["next_step"].(string), "already sent, nothing sent twice") {
			t.Fatalf("send_response of the text the approval sent = %v", again)
		}

		// A rejected draft cannot be sent, and the agent reads the note.
		id2 := ok(t, alice, "ask_person", map[string]any{"to_user_id": "bob", "question": "q2"})["message_id"].(string)
		ok(t, bob, "propose_response", map[string]any{"message_id": id2, "draft_text": "v1"})
		if _, err := person.Reject(ctx, ctalk.Caller{OrgID: "acme", UserID: "bob"}, id2, 1, "say when it thaws"); err != nil {
			t.Fatal(err)
		}
		latest := ok(t, bob, "check_inbox", nil)["questions"].([]any)[0].(map[string]any)["latest_draft"].(map[string]any)
		if latest["rejected_by_person"] != true || latest["rejection_note"] != "say when it thaws" {
			t.Fatalf("check_inbox's latest_draft = %v", latest)
		}
		fail(t, bob, "send_response", map[string]any{"message_id": id2, "final_text": "v1"}, `rejected draft version 1 of message `+id2+` with this note: "say when it thaws"`)
	})
}

// TestOldApprovalLinks: a link of an earlier release leads to its question
// in the web app, and posting it approves nothing.
func TestOldApprovalLinks(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		bob, alice := u["bob"], u["alice"]
		ok(t, alice, "update_org_settings", map[string]any{"org_id": "acme", "approval_mode": "human"})
		id := ok(t, alice, "ask_person", map[string]any{"to_user_id": "bob", "question": "q"})["message_id"].(string)
		ok(t, bob, "propose_response", map[string]any{"message_id": id, "draft_text": "v1"})
		raw, hash := auth.NewToken()
		if _, err := dbtest.Exec(e.DB, `UPDATE drafts SET approval_token_hash = $1 WHERE question_id = $2`, hash, id); err != nil {
			t.Fatal(err)
		}
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for link, want := range map[string]string{raw: "/inbox/" + id + "#v1", "ctalk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA": "/inbox", "nonsense": "/inbox"} {
			resp, err := noFollow.Get(e.URL + "/approve/" + link)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
				t.Fatalf("GET /approve/%s: %d to %q, want 303 to %q", link, resp.StatusCode, resp.Header.Get("Location"), want)
			}
		}
		for _, decision := range []string{"approve", "reject"} {
			if status, body := postForm(t, e.URL+"/approve/"+raw, url.Values{"decision": {decision}}); status != http.StatusGone || !strings.Contains(body, "Nothing was changed") {
				t.Fatalf("POST %s to an old link: %d %s", decision, status, body)
			}
		}
		fail(t, bob, "send_response", map[string]any{"message_id": id, "final_text": "v1"}, "not approved yet")
		if strings.Contains(e.Logs.String(), raw) {
			t.Fatal("the log contains an approval token")
		}
	})
}

func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestAskIdempotentUnderConcurrentRetries(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		bob := u["bob"]
		const n = 16
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				res, err := bob.CallTool(dbtest.Operator(), &mcp.CallToolParams{Name: "ask_person", Arguments: map[string]any{"to_user_id": "alice", "question": "same", "idempotency_key": "k1"}})
				if err != nil || res.IsError {
					t.Errorf("retry %d: %v %v", i, err, res)
					return
				}
				ids[i] = res.StructuredContent.(map[string]any)["message_id"].(string)
			})
		}
		wg.Wait()
		for i := range ids {
			if ids[i] != ids[0] {
				t.Fatalf("retries got different ids: %v", ids)
			}
		}
		var count int
		if err := e.DB.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM questions`).Scan(&count); err != nil || count != 1 {
			t.Fatalf("stored %d questions (err %v), want 1", count, err)
		}
		fail(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": "different", "idempotency_key": "k1"}, "different question")
		// Another asker's identical key is its own.
		ok(t, u["carol"], "ask_person", map[string]any{"to_user_id": "alice", "question": "same", "idempotency_key": "k1"})
	})
}

func TestWaiting(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		bob, alice := u["bob"], u["alice"]

		// Nothing there: returns empty at the timeout.
		w := ok(t, alice, "wait_for_inbox", map[string]any{"timeout_s": 0.2})
		if len(w["questions"].([]any)) != 0 || w["timed_out"] != true || !strings.Contains(w["next_step"].(string), "again") {
			t.Fatalf("empty wait = %v", w)
		}

		// A waiter wakes when the question arrives.
		got := make(chan map[string]any, 1)
		go func() { got <- ok(t, alice, "wait_for_inbox", map[string]any{"timeout_s": 20}) }()
		waitForWaiters(t, e, 1)
		id := ok(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": "wake up"})["message_id"].(string)
		select {
		case w = <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("wait_for_inbox did not wake on ask_person")
		}
		if qs := w["questions"].([]any); len(qs) != 1 || qs[0].(map[string]any)["message_id"] != id {
			t.Fatalf("woken wait = %v", w)
		}
		// Handed once: a second wait does not hand it again.
		if qs := ok(t, alice, "wait_for_inbox", map[string]any{"timeout_s": 0.2})["questions"].([]any); len(qs) != 0 {
			t.Fatalf("question handed twice: %v", qs)
		}

		// Already there: returns at once. A wait that blocked before looking
		// would return at the next wake-up, re-check (an hour away here) or
		// its timeout (120 s), each after call's 30 s deadline has failed it.
		// check_inbox hands questions over too.
		id2 := ok(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": "second"})["message_id"].(string)
		w = ok(t, alice, "wait_for_inbox", map[string]any{"timeout_s": 120})
		if qs := w["questions"].([]any); len(qs) != 1 || qs[0].(map[string]any)["message_id"] != id2 || w["timed_out"] != false {
			t.Fatalf("wait with a question already there = %v", w)
		}
		id3 := ok(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": "third"})["message_id"].(string)
		ok(t, alice, "check_inbox", nil)
		if qs := ok(t, alice, "wait_for_inbox", map[string]any{"timeout_s": 0.2})["questions"].([]any); len(qs) != 0 {
			t.Fatalf("question %s handed by check_inbox was handed again: %v", id3, qs)
		}

		// wait_for_reply wakes on send, for a given message and for any.
		ok(t, alice, "propose_response", map[string]any{"message_id": id, "draft_text": "awake"})
		replies := make(chan map[string]any, 1)
		go func() { replies <- ok(t, bob, "wait_for_reply", map[string]any{"timeout_s": 20}) }()
		waitForWaiters(t, e, 1)
		ok(t, alice, "send_response", map[string]any{"message_id": id, "final_text": "awake"})
		select {
		case r := <-replies:
			if rs := r["replies"].([]any); len(rs) != 1 || rs[0].(map[string]any)["answer"] != "awake" {
				t.Fatalf("wait_for_reply = %v", r)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("wait_for_reply did not wake on send_response")
		}
		if rs := ok(t, bob, "wait_for_reply", map[string]any{"message_id": id, "timeout_s": 0.2})["replies"].([]any); len(rs) != 0 {
			t.Fatalf("reply handed twice: %v", rs)
		}
		fail(t, alice, "wait_for_reply", map[string]any{"message_id": id, "timeout_s": 0.1}, "not found")
		fail(t, alice, "wait_for_inbox", map[string]any{"timeout_s": -1}, "timeout_s")
	}, options{Inbox: func(c *inbox.Config) { c.Recheck = time.Hour }})
}

func TestWakeAcrossReplicas(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			one := start(t, db.Postgres)
			two := start(t, db.Postgres, options{SharedWith: one})
			u := one.Org(t, era, "acme")
			aliceOnTwo := two.Connect(t, era, two.Login(t, two.Connect(t, era, ""), "acme", "alice"))
			got := make(chan map[string]any, 1)
			go func() { got <- ok(t, aliceOnTwo, "wait_for_inbox", map[string]any{"timeout_s": 60}) }()
			waitForWaiters(t, two, 1)
			id := ok(t, u["bob"], "ask_person", map[string]any{"to_user_id": "alice", "question": "across"})["message_id"].(string)
			select {
			case w := <-got:
				if qs := w["questions"].([]any); len(qs) != 1 || qs[0].(map[string]any)["message_id"] != id {
					t.Fatalf("wait on the other replica = %v", w)
				}
			case <-time.After(5 * time.Second):
				// The safety re-check runs every 10 s; a wake within 5 s came from NOTIFY.
				t.Fatal("an ask on one replica did not wake a waiter on the other")
			}
		})
	}
}

func TestMessagesOfAnotherOrgAreNotFound(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		a := e.Org(t, era, "org-a")
		b := e.Org(t, era, "org-b")
		id := ok(t, a["bob"], "ask_person", map[string]any{"to_user_id": "alice", "question": "secret"})["message_id"].(string)
		ok(t, a["alice"], "propose_response", map[string]any{"message_id": id, "draft_text": "d"})
		mallory := b["alice"]
		fail(t, b["bob"], "ask_person", map[string]any{"to_user_id": "zed", "question": "hi"}, "not found")
		for tool, args := range map[string]map[string]any{
			"propose_response":  {"message_id": id, "draft_text": "d"},
			"send_response":     {"message_id": id, "final_text": "d"},
			"decline_question":  {"message_id": id, "reason": "r"},
			"withdraw_question": {"message_id": id},
			"wait_for_reply":    {"message_id": id, "timeout_s": 0},
		} {
			fail(t, mallory, tool, args, "not found")
		}
		if qs := ok(t, mallory, "check_inbox", nil)["questions"].([]any); len(qs) != 0 {
			t.Fatalf("another org's inbox shows %v", qs)
		}
		// org-b's alice is not org-a's alice: the question stays in org-a.
		if qs := ok(t, a["alice"], "check_inbox", nil)["questions"].([]any); len(qs) != 1 {
			t.Fatalf("org-a inbox = %v", qs)
		}
	})
}

func TestAskLimits(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine, options{Inbox: func(c *inbox.Config) { c.AsksPerMinute = 3; c.LoopMax = 100 }})
			u := e.Org(t, eraStateless, "acme")
			first := ok(t, u["bob"], "ask_person", map[string]any{"to_user_id": "alice", "question": "q0", "idempotency_key": "k0"})
			for i := 1; i < 3; i++ {
				ok(t, u["bob"], "ask_person", map[string]any{"to_user_id": "alice", "question": fmt.Sprint("q", i)})
			}
			fail(t, u["bob"], "ask_person", map[string]any{"to_user_id": "carol", "question": "one more"}, "retry after")
			// A retry of an already stored question is not a new ask: the
			// exhausted rate does not refuse it, and it gets the stored question.
			retryReturnsStored(t, u["bob"], first, "alice", "q0", "k0")
			fail(t, u["bob"], "ask_person", map[string]any{"to_user_id": "alice", "question": "q-new", "idempotency_key": "k-new"}, "retry after")

			e2 := start(t, engine, options{Inbox: func(c *inbox.Config) { c.AsksPerMinute = 100; c.LoopMax = 4 }})
			u2 := e2.Org(t, eraStateless, "acme")
			var firstOfPair map[string]any
			for i := range 2 {
				q := ok(t, u2["bob"], "ask_person", map[string]any{"to_user_id": "alice", "question": fmt.Sprint("b", i), "idempotency_key": fmt.Sprint("kb", i)})
				if i == 0 {
					firstOfPair = q
				}
				ok(t, u2["alice"], "ask_person", map[string]any{"to_user_id": "bob", "question": fmt.Sprint("a", i)})
			}
			fail(t, u2["bob"], "ask_person", map[string]any{"to_user_id": "alice", "question": "again"}, "loop")
			// Nor does the exhausted loop breaker refuse a retry.
			retryReturnsStored(t, u2["bob"], firstOfPair, "alice", "b0", "kb0")
			ok(t, u2["bob"], "ask_person", map[string]any{"to_user_id": "carol", "question": "someone else"})
		})
	}
}

// retryReturnsStored retries an ask with the same key and question and
// checks that it gets the stored question back, unchanged.
func retryReturnsStored(t *testing.T, cs *mcp.ClientSession, stored map[string]any, to, question, key string) {
	t.Helper()
	got := ok(t, cs, "ask_person", map[string]any{"to_user_id": to, "question": question, "idempotency_key": key})
	if mustJSON(got) != mustJSON(stored) {
		t.Fatalf("retry of %s = %v, want the stored question %v", key, got, stored)
	}
}
