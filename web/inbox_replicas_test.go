package web_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestApprovalReachesTheAskerOnAnotherReplica: two servers on one Postgres
// database. Alice's agent waits in wait_for_reply on the second; bob's
// agent proposed a draft and went away; bob approves the draft, or edits
// another, in the web app on the first. Alice's wait returns with the
// answer at once, woken across replicas: the safety re-check, set to an
// hour, cannot have done it, and no agent of bob's sent anything.
func TestApprovalReachesTheAskerOnAnotherReplica(t *testing.T) {
	t.Parallel()
	slow := func(w *app.Wiring) { w.Inbox.Recheck = time.Hour }
	one := start(t, db.Postgres, slow)
	two := apitest.Start(t, one.DB, slow)
	one.org(t, "acme")
	ctx := dbtest.Operator()
	token, _, err := two.Auth.Login(ctx, "acme", "alice", userPW, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	alice := testkit.Connect(t, two.URL, testkit.EraSessions, token)
	bob := one.newClient(t, "acme", "bob")

	for _, c := range []struct {
		decision, draft, answer string
		form                    url.Values
	}{
		{"approve", "Yes, until Monday.", "Yes, until Monday.", url.Values{"version": {"1"}}},
		{"edit", "Yes.", "Yes, until Monday 9:00 UTC.", url.Values{"version": {"1"}, "text": {"Yes, until Monday 9:00 UTC."}}},
	} {
		t.Run(c.decision, func(t *testing.T) {
			id := one.ask(t, "alice", "bob", "Is prod frozen? ("+c.decision+")")
			agent := one.agent(t, "acme", "bob")
			testkit.OK(t, agent, "propose_response", map[string]any{"message_id": id, "draft_text": c.draft})
			if err := agent.Close(); err != nil {
				t.Fatal(err)
			}

			got := make(chan map[string]any, 1)
			go func() {
				got <- testkit.OK(t, alice, "wait_for_reply", map[string]any{"message_id": id, "timeout_s": 60})
			}()
			apitest.WaitForWaiters(t, 1, two.Broker)
			if code, page := bob.post("/inbox/"+id+"/"+c.decision, c.form); code != http.StatusOK {
				t.Fatalf("bob's %s on the first replica: %d\n%s", c.decision, code, page)
			}
			select {
			case r := <-got:
				replies := r["replies"].([]any)
				if len(replies) != 1 {
					t.Fatalf("wait_for_reply = %v, want the answer", r)
				}
				if reply := replies[0].(map[string]any); reply["message_id"] != id || reply["answer"] != c.answer || reply["resolved_by"] != "bob" {
					t.Fatalf("alice's agent received %v, want %q from bob", reply, c.answer)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the person's decision on one replica did not reach the asker waiting on the other")
			}
		})
	}
}
