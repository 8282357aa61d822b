package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
)

// TestKnowledgePage: a person shares an answer as they write or approve
// it; the Knowledge page shows only shared answers of the org, to
// everyone, with edit and unshare for the answerer and admins alone; the
// People page ranks who knows a topic.
func TestKnowledgePage(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		s.org(t, "zeta")
		ctx := dbtest.Operator()
		ask := func(org, from, to, text string) string {
			t.Helper()
			q, err := s.Inbox.Ask(ctx, ctalk.Caller{OrgID: org, UserID: from}, inbox.Ask{To: to, Text: text})
			if err != nil {
				t.Fatal(err)
			}
			return q.ID
		}
		alice, bob, carol := s.newClient(t, "acme", "alice"), s.newClient(t, "acme", "bob"), s.newClient(t, "acme", "carol")
		shared := ask("acme", "bob", "carol", "How do we rotate the gateway certificates?")
		carol.post("/inbox/"+shared+"/answer", url.Values{"text": {"Renew the gateway certificates with certbot, then reload."}, "share_offered": {"1"}, "share": {"yes"}})
		private := ask("acme", "bob", "carol", "Are the gateway certificates expiring soon?")
		carol.post("/inbox/"+private+"/answer", url.Values{"text": {"The gateway certificates expire in March (private)."}, "share_offered": {"1"}})
		zeta := ask("zeta", "bob", "carol", "Where are zeta's gateway certificates?")
		s.newClient(t, "zeta", "carol").post("/inbox/"+zeta+"/answer", url.Values{"text": {"Zeta keeps gateway certificates in its vault."}, "share_offered": {"1"}, "share": {"yes"}})

		// Approving in the web app sends the answer, shared as the person
		// chose; the agent's send of it afterwards, proposing otherwise,
		// changes nothing.
		approved := ask("acme", "carol", "alice", "What is the gateway timeout?")
		if _, _, err := s.Inbox.Propose(ctx, ctalk.Caller{OrgID: "acme", UserID: "alice"}, approved, "Thirty seconds at the gateway."); err != nil {
			t.Fatal(err)
		}
		_, page := alice.get("/inbox/" + approved)
		mustShow(t, "question page", page, `name="share_offered"`, "Share on the Knowledge page")
		alice.post("/inbox/"+approved+"/approve", url.Values{"version": {"1"}, "share_offered": {"1"}, "share": {"yes"}, "back": {"/inbox/" + approved}})
		sent := testkit.OK(t, s.agent(t, "acme", "alice"), "send_response", map[string]any{"message_id": approved, "final_text": "Thirty seconds at the gateway.", "share": false})
		if sent["status"] != "answered" || sent["sharing"] != nil {
			t.Fatalf("send_response after the person approved and shared = %v", sent)
		}

		for name, c := range map[string]*client{"alice": alice, "bob": bob, "carol": carol} {
			code, page := c.get("/knowledge?q=gateway")
			if code != http.StatusOK {
				t.Fatalf("%s: /knowledge: %d", name, code)
			}
			mustShow(t, name+"'s knowledge", page, "Renew the gateway certificates", "Thirty seconds at the gateway.")
			mustNotShow(t, name+"'s knowledge", page, "(private)", "vault")
		}
		// Before a search, the most recently shared answers, newest first.
		_, page = bob.get("/knowledge")
		mustShow(t, "bob's knowledge before a search", page, "Recently shared", "Renew the gateway certificates", "Thirty seconds at the gateway.")
		mustNotShow(t, "bob's knowledge before a search", page, "(private)", "vault", "No answer is shared yet")
		if strings.Index(page, "Thirty seconds") > strings.Index(page, "Renew the gateway") {
			t.Errorf("the recent answers are not newest first")
		}
		_, page = s.newClient(t, "zeta", "bob").get("/knowledge")
		mustShow(t, "zeta's knowledge before a search", page, "vault")
		mustNotShow(t, "zeta's knowledge before a search", page, "Renew the gateway", "Thirty seconds")
		_, page = bob.get("/knowledge?q=certbot")
		mustNotShow(t, "bob's knowledge", page, "/unshare", "Save the shared answer")
		_, page = carol.get("/knowledge?q=certbot")
		mustShow(t, "carol's knowledge", page, "/knowledge/"+shared+"/unshare")

		_, page = bob.get("/people?topic=gateway")
		mustShow(t, "who knows", page, "Who knows about gateway", `href="/people/carol">Carol</a>`, "1 shared answers on it")
		_, page = bob.get("/people?topic=carol*")
		mustShow(t, "who knows", page, "owns carol-repo (prefix)")
		code, page := bob.post("/knowledge/"+shared+"/unshare", url.Values{"back": {"/knowledge?q=certbot"}})
		if code != http.StatusForbidden || !strings.Contains(page, "only carol") {
			t.Errorf("bob unsharing carol's answer: %d", code)
		}
		alice.post("/knowledge/"+shared+"/edit", url.Values{"text": {"Use the cert-manager now."}, "back": {"/knowledge?q=certbot"}})
		_, page = bob.get("/knowledge?q=manager")
		// The words are alice's now, and the page says so.
		mustShow(t, "the admin's edit", page, "Use the cert-manager now.", `edited by <a href="/people/alice">alice</a>, not Carol`)
		_, page = carol.post("/knowledge/"+shared+"/unshare", url.Values{"back": {"/knowledge?q=certbot"}})
		mustShow(t, "after unsharing", page, "no longer shared")
		if _, page := bob.get("/knowledge?q=manager"); strings.Contains(page, "cert-manager") {
			t.Errorf("unshared, the answer is still shown")
		}

		if code, page := bob.get("/people?topic=the"); code != http.StatusBadRequest || !strings.Contains(page, "no word to search for") {
			t.Errorf("/people?topic=the: %d", code)
		}
		if _, err := s.Orgs.SetSettings(ctx, "acme", orgs.Settings{KnowledgeSharing: orgs.SharingOff}); err != nil {
			t.Fatal(err)
		}
		_, page = bob.get("/knowledge?q=gateway")
		mustNotShow(t, "knowledge with sharing off", page, "Thirty seconds")
		_, page = alice.get("/inbox")
		mustNotShow(t, "inbox with sharing off", page, "share_offered")
	})
}
