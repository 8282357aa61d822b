package web_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
)

// TestAwayForwardAndInfoInTheWeb: alice sets herself away and back on her
// profile, and People shows it, also in who knows a topic; bob's question to alice is forwarded with a
// note to carol, who asks bob for more; bob replies on the asked page,
// carol answers, and bob's follow-up reaches carol with its thread; each by
// a form, and a refusal says what to do.
func TestAwayForwardAndInfoInTheWeb(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		alice, bob, carol := s.newClient(t, "acme", "alice"), s.newClient(t, "acme", "bob"), s.newClient(t, "acme", "carol")
		tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)

		code, body := alice.post("/profile/away", url.Values{"away_until": {"2001-01-01"}})
		if code != http.StatusBadRequest {
			t.Fatalf("away in the past: %d", code)
		}
		mustShow(t, "away in the past", body, "in the future")
		code, body = alice.post("/profile/away", url.Values{"away_until": {tomorrow}, "away_delegate": {"nobody"}})
		if code != http.StatusBadRequest {
			t.Fatalf("away with an unknown delegate: %d", code)
		}
		mustShow(t, "an unknown delegate", body, "delegate", "not found")
		code, body = alice.post("/profile/away", url.Values{"away_until": {tomorrow}, "away_delegate": {"carol"}, "away_note": {"offsite"}})
		if code != http.StatusOK {
			t.Fatalf("away: %d %s", code, body)
		}
		mustShow(t, "away set", body, "You are away", "I am back")
		_, body = bob.get("/people")
		mustShow(t, "People with alice away", body, "<strong>away</strong>", "ask carol")
		_, body = bob.get("/people?topic=alice-repo")
		mustShow(t, "who knows, with alice away", body, `href="/people/alice">Alice</a>`, "<strong>Away</strong> until", `ask <a href="/people/carol">carol</a> instead`, "offsite")

		q, err := s.Inbox.Ask(dbtest.Operator(), ctalk.Caller{OrgID: "acme", UserID: "bob"}, inbox.Ask{To: "alice", Text: "who owns invoices?"})
		if err != nil {
			t.Fatal(err)
		}
		code, body = alice.post("/inbox/"+q.ID+"/forward", url.Values{"to_user_id": {"bob"}})
		if code != http.StatusBadRequest {
			t.Fatalf("forward to the asker: %d", code)
		}
		mustShow(t, "forward to the asker", body, "request_info")
		if code, body = alice.post("/inbox/"+q.ID+"/forward", url.Values{"to_user_id": {"carol"}, "note": {"Carol runs invoicing"}}); code != http.StatusOK {
			t.Fatalf("forward: %d %s", code, body)
		}
		mustShow(t, "after the forward", body, "Forwarded.")
		_, body = carol.get("/inbox/" + q.ID)
		mustShow(t, "carol's question", body, "alice forwarded it to carol", "Carol runs invoicing")
		if code, _ := alice.get("/inbox/" + q.ID); code != http.StatusNotFound {
			t.Fatalf("alice opens the question she forwarded: %d; want 404", code)
		}
		if code, body = carol.post("/inbox/"+q.ID+"/request-info", url.Values{"request": {"for which customer?"}}); code != http.StatusOK {
			t.Fatalf("request info: %d %s", code, body)
		}
		mustShow(t, "after the request", body, "Waiting for Bob")
		_, body = bob.get("/asked")
		mustShow(t, "bob's asked page", body, "Waiting for your information", "for which customer?", "/asked/"+q.ID+"/provide-info")
		if code, body = bob.post("/asked/"+q.ID+"/provide-info", url.Values{"information": {"Initech"}}); code != http.StatusOK {
			t.Fatalf("provide info: %d %s", code, body)
		}
		_, body = carol.get("/inbox/" + q.ID)
		mustShow(t, "carol's question after the reply", body, "bob replied with the information", "Initech", "Forward the question")
		if code, body = carol.post("/inbox/"+q.ID+"/answer", url.Values{"text": {"Dana does"}}); code != http.StatusOK {
			t.Fatalf("answer: %d %s", code, body)
		}
		_, body = bob.get("/asked")
		mustShow(t, "bob's asked page after the answer", body, "Ask a follow-up", "Dana does")
		code, body = bob.post("/asked", url.Values{"to": {"carol"}, "follow_up_of": {q.ID}, "text": {"and her email?"}, "key": {"k1"}})
		if code != http.StatusOK {
			t.Fatalf("follow-up: %d %s", code, body)
		}
		_, body = carol.get("/inbox")
		mustShow(t, "carol's inbox with the follow-up", body, "and her email?", "Earlier in this thread", "Dana does")

		if code, body = alice.post("/profile/away/clear", url.Values{}); code != http.StatusOK {
			t.Fatalf("back: %d %s", code, body)
		}
		mustShow(t, "back", body, "Welcome back", "Set me away")
	})
}
