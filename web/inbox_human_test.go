package web_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestHumanApprovalNeedsTheRecipientsSession: in human approval mode the
// approval_url approves nothing by itself, whoever holds it; only the
// recipient, signed in, with the form's CSRF token, approves.
func TestHumanApprovalNeedsTheRecipientsSession(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		if _, err := s.Orgs.SetApprovalMode(dbtest.Operator(), "acme", "human"); err != nil {
			t.Fatal(err)
		}
		agent := s.agent(t, "acme", "bob")
		id := s.ask(t, "alice", "bob", "Is prod frozen?")
		link := testkit.OK(t, agent, "propose_response", map[string]any{"message_id": id, "draft_text": "yes"})["approval_url"].(string)
		if link != s.URL+"/inbox/"+id+"#v1" {
			t.Fatalf("approval_url = %q", link)
		}
		notApproved := func(what string) {
			t.Helper()
			if d := s.review(t, id).Latest(); d.Approved {
				t.Fatalf("%s approved the draft", what)
			}
			testkit.Fail(t, agent, "send_response", map[string]any{"message_id": id, "final_text": "yes"}, "not approved yet")
		}
		// The agent fetches its link with its own token: it is the sign-in page.
		req, _ := http.NewRequest(http.MethodGet, link, nil)
		tok, _, err := s.Auth.Login(dbtest.Operator(), "acme", "bob", userPW, "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		code, page := do(t, http.DefaultClient, req)
		if code != http.StatusOK || !strings.Contains(page, `name="next" value="/inbox/`+id+`"`) {
			t.Fatalf("the agent fetching its approval_url: %d\n%s", code, page)
		}
		notApproved("the agent fetching the link")
		// Forwarded to another member, or the asker: not found.
		for _, who := range []string{"carol", "alice"} {
			c := s.newClient(t, "acme", who)
			if code, _ := c.get("/inbox/" + id); code != http.StatusNotFound {
				t.Fatalf("%s opens the link: %d, want 404", who, code)
			}
			if code, _ := c.post("/inbox/"+id+"/approve", url.Values{"version": {"1"}}); code != http.StatusNotFound {
				t.Fatalf("%s approves: %d, want 404", who, code)
			}
		}
		notApproved("another member's session")
		// A cross-site form rides on bob's session cookie, without the token.
		bob := s.newClient(t, "acme", "bob")
		req, _ = http.NewRequest(http.MethodPost, s.URL+"/inbox/"+id+"/approve", strings.NewReader(url.Values{"version": {"1"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "https://attacker.example")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		if code, page := do(t, bob.http, req); code != http.StatusForbidden {
			t.Fatalf("a cross-site approval: %d, want 403\n%s", code, page)
		}
		notApproved("a cross-site form")
		// Bob, signed in, approves, which sends the answer; his agent's send
		// of it afterwards sends nothing more.
		if code, page := bob.post("/inbox/"+id+"/approve", url.Values{"version": {"1"}}); code != http.StatusOK || !strings.Contains(page, "Approved and sent.") || s.review(t, id).Answer != "yes" {
			t.Fatalf("bob approves: %d\n%s", code, page)
		}
		testkit.OK(t, agent, "send_response", map[string]any{"message_id": id, "final_text": "yes"})
	})
}

// TestInboxShowsHiddenCharacters: where a person approves text, characters
// they cannot see are shown as markers and announced, also in the box to
// edit a draft; the approval still sends the exact text.
func TestInboxShowsHiddenCharacters(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		const draft = "No\u200B, wait \u2066until\u2069 Monday"
		id := s.ask(t, "alice", "bob", "Can I deploy?")
		s.propose(t, id, draft)
		bob := s.newClient(t, "acme", "bob")
		_, page := bob.get("/inbox/" + id)
		contains(t, "the question page", page, "Hidden characters shown", "3 character(s)",
			"No⟦U+200B⟧, wait ⟦U+2066⟧until⟦U+2069⟧ Monday", "The draft holds 3 hidden character(s), kept in this box")
		for _, r := range "\u200B\u2066\u2069" {
			if strings.Count(page, string(r)) != 1 {
				t.Fatalf("U+%04X appears raw outside the edit box:\n%s", r, page)
			}
		}
		if code, _ := bob.post("/inbox/"+id+"/approve", url.Values{"version": {"1"}}); code != http.StatusOK {
			t.Fatalf("approve: %d", code)
		}
		if r := s.review(t, id); r.Answer != draft {
			t.Fatalf("the approval sent %q, want exactly %q", r.Answer, draft)
		}
		// Plain text carries no notice.
		id2 := s.ask(t, "carol", "bob", "plain?")
		s.propose(t, id2, "yes")
		if _, page := bob.get("/inbox/" + id2); strings.Contains(page, "Hidden characters") || strings.Contains(html.UnescapeString(page), "⟦") {
			t.Fatalf("a page of plain text warns of hidden characters:\n%s", page)
		}
	})
}

func do(t *testing.T, c *http.Client, req *http.Request) (int, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return read(t, resp)
}
