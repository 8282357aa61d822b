package web_test

import (
	"html"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/testkit"
)

// The inbox section through its forms, as a browser without a browser.

// ask stores a question from asker to recipient in org acme and returns its
// id.
func (s *site) ask(t testing.TB, asker, recipient, text string) string {
	t.Helper()
	q, err := s.Inbox.Ask(dbtest.Operator(), acme(asker), inbox.Ask{To: recipient, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return q.ID
}

// propose saves bob's agent's draft of the answer to id.
func (s *site) propose(t testing.TB, id, text string) {
	t.Helper()
	if _, _, err := s.Inbox.Propose(dbtest.Operator(), acme("bob"), id, text); err != nil {
		t.Fatal(err)
	}
}

// review is bob's question id as the domain stores it.
func (s *site) review(t testing.TB, id string) *inbox.Review {
	t.Helper()
	r, err := s.Inbox.Review(dbtest.Operator(), acme("bob"), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// contains fails unless the page holds every one of want, in that order.
func contains(t testing.TB, what, page string, want ...string) {
	t.Helper()
	rest := html.UnescapeString(page)
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("%s lacks %q (or has it out of order):\n%s", what, w, page)
		}
		rest = rest[i+len(w):]
	}
}

func TestInboxListsQuestionsWithoutHandingThemToTheAgent(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		first := s.ask(t, "alice", "bob", "Is <b>prod</b> frozen \u202Etoday\u202C?")
		second := s.ask(t, "carol", "bob", "Who owns billing?")
		s.propose(t, first, "v1: no")
		s.propose(t, first, "v2: no, it thaws on Monday")
		bob := s.newClient(t, "acme", "bob")
		code, page := bob.get("/inbox")
		if code != http.StatusOK || strings.ContainsRune(page, '\u202E') || strings.Contains(page, "<b>prod") {
			t.Fatalf("/inbox: %d, or it holds the question's markup or hidden characters raw:\n%s", code, page)
		}
		contains(t, "/inbox", page, "(2) Inbox", "Alice asks", "alice-repo", "Hidden characters shown",
			"Is <b>prod</b> frozen ⟦U+202E⟧today⟦U+202C⟧?", "they asked you 1, you asked them 0",
			`id="`+first+`-v2"`, "v2: no, it thaws on Monday", "Approve and send",
			"Earlier versions (1)", `id="`+first+`-v1"`, "v1: no", "<summary>Edit</summary>", "<summary>Reject</summary>", "Answer yourself", "Decline the question",
			"Carol asks", "carol-repo", "Who owns billing?", "Your agent has not proposed an answer yet")
		// The person looked; their agent is still handed both questions.
		got := testkit.OK(t, s.agent(t, "acme", "bob"), "wait_for_inbox", map[string]any{"timeout_s": 0})
		if qs := got["questions"].([]any); len(qs) != 2 || qs[0].(map[string]any)["message_id"] != first || qs[1].(map[string]any)["message_id"] != second {
			t.Fatalf("after the person looked, the agent was handed %v; want both questions", got)
		}
		if code, page := s.newClient(t, "acme", "carol").get("/inbox"); code != http.StatusOK || !strings.Contains(page, "Nothing waits for you") {
			t.Fatalf("carol's empty inbox: %d\n%s", code, page)
		}
	})
}

func TestInboxQuestionPage(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		s.org(t, "other")
		id := s.ask(t, "alice", "bob", "Retry logic?")
		s.propose(t, id, "three retries")
		s.propose(t, id, "three retries, backoff")
		code, page := s.newClient(t, "acme", "bob").get("/inbox/" + id)
		if code != http.StatusOK {
			t.Fatalf("question page: %d\n%s", code, page)
		}
		contains(t, "the question page", page, "Question from Alice", "Retry logic?", `id="v2"`, "three retries, backoff",
			`name="version" value="2"`, `id="v1"`, "three retries")
		// Only the recipient sees it: the asker, another member and another
		// org's member are told it is not found, as is a malformed id.
		for _, who := range [][3]string{{"acme", "alice", id}, {"acme", "carol", id}, {"other", "bob", id}, {"acme", "bob", "q_nonsense"}} {
			code, page := s.newClient(t, who[0], who[1]).get("/inbox/" + who[2])
			if code != http.StatusNotFound || strings.Contains(page, "three retries") || !strings.Contains(page, "not") {
				t.Fatalf("%s of %s opens %s: %d\n%s", who[1], who[0], who[2], code, page)
			}
		}
		// Signed out, it asks for sign-in and returns here.
		if code, page := s.anonymous(t).get("/inbox/" + id); code != http.StatusOK || !strings.Contains(page, `name="next" value="/inbox/`+id+`"`) {
			t.Fatalf("signed-out question page: %d\n%s", code, page)
		}
	})
}

func TestInboxActions(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		bob := s.newClient(t, "acme", "bob")
		agent := s.agent(t, "acme", "bob")
		t.Run("approve", func(t *testing.T) {
			id := s.ask(t, "alice", "bob", "q?")
			s.propose(t, id, "yes")
			code, page := bob.post("/inbox/"+id+"/approve", url.Values{"version": {"1"}, "back": {"/inbox"}})
			if r := s.review(t, id); code != http.StatusOK || !strings.Contains(page, "Approved and sent.") ||
				!r.Latest().Approved || r.Status != inbox.StatusAnswered || r.Answer != "yes" {
				t.Fatalf("approve: %d, %+v\n%s", code, r.Question, page)
			}
			// The agent's send of the same text afterwards sends nothing more.
			if sent := testkit.OK(t, agent, "send_response", map[string]any{"message_id": id, "final_text": "yes"}); !strings.HasPrefix(sent["next_step"].(string), "already sent") {
				t.Fatalf("send_response after the approval = %v", sent)
			}
		})
		t.Run("edit", func(t *testing.T) {
			id := s.ask(t, "alice", "bob", "q?")
			s.propose(t, id, "yes")
			code, page := bob.post("/inbox/"+id+"/edit", url.Values{"version": {"1"}, "text": {"yes,\r\nafter lunch"}})
			r := s.review(t, id)
			d := r.Latest()
			if code != http.StatusOK || !strings.Contains(page, "Your version is sent") || d.Version != 2 || !d.Approved || !d.ByPerson || d.Text != "yes,\nafter lunch" ||
				r.Status != inbox.StatusAnswered || r.Answer != d.Text {
				t.Fatalf("edit: %d, latest %+v\n%s", code, d, page)
			}
			testkit.Fail(t, agent, "send_response", map[string]any{"message_id": id, "final_text": "yes"}, `"yes,\nafter lunch"`)
		})
		t.Run("reject", func(t *testing.T) {
			id := s.ask(t, "alice", "bob", "q?")
			s.propose(t, id, "yes")
			code, page := bob.post("/inbox/"+id+"/reject", url.Values{"version": {"1"}, "note": {"say which day"}})
			if code != http.StatusOK || !strings.Contains(page, "Rejected.") || !strings.Contains(page, "say which day") {
				t.Fatalf("reject: %d\n%s", code, page)
			}
			testkit.Fail(t, agent, "send_response", map[string]any{"message_id": id, "final_text": "yes"}, `"say which day"`)
		})
		t.Run("decline", func(t *testing.T) {
			id := s.ask(t, "alice", "bob", "q?")
			code, page := bob.post("/inbox/"+id+"/decline", url.Values{"reason": {"ask carol"}, "back": {"/inbox"}})
			if r := s.review(t, id); code != http.StatusOK || !strings.Contains(page, "Declined.") || r.Status != inbox.StatusDeclined || r.Reason != "ask carol" {
				t.Fatalf("decline: %d, %+v\n%s", code, r.Question, page)
			}
		})
		t.Run("answer", func(t *testing.T) {
			id := s.ask(t, "alice", "bob", "q?")
			code, page := bob.post("/inbox/"+id+"/answer", url.Values{"text": {"I do,\r\nsince May"}})
			if r := s.review(t, id); code != http.StatusOK || !strings.Contains(page, "Sent.") || r.Status != inbox.StatusAnswered || r.Answer != "I do,\nsince May" {
				t.Fatalf("answer: %d, %+v\n%s", code, r.Question, page)
			}
		})
	})
}

// TestInboxRefusals: every way an action can be refused changes nothing
// and says why.
func TestInboxRefusals(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		s.org(t, "other")
		id := s.ask(t, "alice", "bob", "q?")
		s.propose(t, id, "v1")
		s.propose(t, id, "v2")
		bob := s.newClient(t, "acme", "bob")
		actions := map[string]url.Values{
			"approve": {"version": {"2"}},
			"edit":    {"version": {"2"}, "text": {"mine"}},
			"reject":  {"version": {"2"}, "note": {"no"}},
			"decline": {"reason": {"no"}},
			"answer":  {"text": {"mine"}},
		}
		for action, form := range actions {
			path := "/inbox/" + id + "/" + action
			refused(t, "without a session", s.anonymous(t), path, form, http.StatusUnauthorized, "not signed in")
			refused(t, "without the CSRF token", bob, path, form, http.StatusForbidden, "did not come from this site")
			refused(t, "by the asker", s.newClient(t, "acme", "alice"), path, form, http.StatusNotFound, "not among the questions sent to you")
			refused(t, "by another member", s.newClient(t, "acme", "carol"), path, form, http.StatusNotFound, "not found")
			refused(t, "by another org's bob", s.newClient(t, "other", "bob"), path, form, http.StatusNotFound, "not found")
		}
		for _, c := range []struct {
			action, version string
			status          int
			want            string
		}{
			{"approve", "1", http.StatusConflict, "version 1 of message " + id + " is no longer the latest: version 2 was written since"},
			{"reject", "3", http.StatusNotFound, "has no draft version 3"},
			{"edit", "", http.StatusBadRequest, "names no draft version"},
		} {
			form := url.Values{"version": {c.version}, "text": {"kept words"}, "note": {"kept note"}}
			refused(t, c.action+" version "+c.version, bob, "/inbox/"+id+"/"+c.action, form, c.status, c.want)
		}
		refused(t, "an empty answer", bob, "/inbox/"+id+"/answer", url.Values{}, http.StatusBadRequest, "answer is required")
		if r := s.review(t, id); r.Status != inbox.StatusPending || r.DraftCount != 2 || r.Latest().Approved || r.Latest().Rejected {
			t.Fatalf("after the refusals: %+v %+v", r.Question, r.Latest())
		}
		// Once answered, every action says so.
		if _, err := s.Inbox.AnswerDirectly(dbtest.Operator(), acme("bob"), id, "done"); err != nil {
			t.Fatal(err)
		}
		for action, form := range actions {
			refused(t, action+" once answered", bob, "/inbox/"+id+"/"+action, form, http.StatusConflict, "is already answered")
		}
	})
}

// refused posts form to path as c (with c's CSRF token unless the case is
// about its absence) and checks the refusal's status and words.
func refused(t *testing.T, what string, c *client, path string, form url.Values, status int, want string) {
	t.Helper()
	post := c.post
	if strings.Contains(what, "CSRF") {
		post = c.postRaw
	}
	f := url.Values{}
	for k, v := range form {
		f[k] = v
	}
	code, page := post(path, f)
	if code != status || !strings.Contains(html.UnescapeString(page), want) {
		t.Fatalf("%s %s: %d, want %d with %q:\n%s", path, what, code, status, want, page)
	}
}

// TestInboxActionsAreAudited: a person's decisions are in the org's audit
// log as the tools' calls are, with the message id and never the text.
func TestInboxActionsAreAudited(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		id := s.ask(t, "alice", "bob", "q?")
		s.propose(t, id, "yes")
		s.newClient(t, "acme", "bob").post("/inbox/"+id+"/reject", url.Values{"version": {"1"}, "note": {"secret words"}})
		s.newClient(t, "acme", "carol").post("/inbox/"+id+"/approve", url.Values{"version": {"1"}})
		want := map[string]string{"bob": "web:reject_draft ok", "carol": "web:approve_draft not_found"}
		testkit.WaitFor(t, 10*time.Second, "the audit events", func() (bool, error) {
			evs, _, err := s.Audit.Events(dbtest.Operator(), "acme", audit.Filter{Limit: 50})
			got := map[string]string{}
			for _, e := range evs {
				if strings.HasPrefix(e.Tool, "web:") && len(e.IDs) == 1 && e.IDs[0] == id {
					got[e.UserID] = e.Tool + " " + e.Outcome
				}
			}
			return reflect.DeepEqual(got, want), err
		})
		var n int
		if err := s.DB.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM audit_events WHERE ids LIKE '%secret%' OR tool LIKE '%secret%'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("the audit log holds what was typed: %d rows (err %v)", n, err)
		}
	})
}

// TestInboxDraftRegionsNamedApart: each question listed in the inbox names
// its drafts' region for itself, so that no two landmarks of the page have
// the same name, even for two questions from the same person.
func TestInboxDraftRegionsNamedApart(t *testing.T) {
	t.Parallel()
	s := start(t, db.SQLite)
	s.org(t, "acme")
	for _, text := range []string{"Where is the runbook?", "And the rota?"} {
		s.propose(t, s.ask(t, "alice", "bob", text), "Here.")
	}
	s.ask(t, "carol", "bob", "Lunch?")
	_, body := s.newClient(t, "acme", "bob").get("/inbox")
	names := regexp.MustCompile(`<section class="inbox-drafts" aria-label="([^"]*)"`).FindAllStringSubmatch(body, -1)
	seen := map[string]bool{}
	for _, m := range names {
		if seen[m[1]] {
			t.Errorf("two drafts regions are named %q", m[1])
		}
		seen[m[1]] = true
	}
	if len(names) != 3 || !seen["Drafts of question 1, from Alice"] {
		t.Errorf("drafts regions %q, want 3 named for their question", names)
	}
}

// TestApprovalSaysItSends: the approve button says that it sends the
// draft, and once pressed the question's page says it was answered and
// marks the version that went out with the time it was sent.
func TestApprovalSaysItSends(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		id := s.ask(t, "alice", "bob", "Retry logic?")
		s.propose(t, id, "Three retries.")
		bob := s.newClient(t, "acme", "bob")
		_, page := bob.get("/inbox/" + id)
		contains(t, "the question's page", page, `id="approve-`+id+`">Approve and send</button>`, "Alice's agent receives exactly this text at once.",
			"sent to Alice at once, exactly as you type it", "Approve and send my version")
		code, page := bob.post("/inbox/"+id+"/approve", url.Values{"version": {"1"}, "back": {"/inbox/" + id}})
		if code != http.StatusOK || strings.Contains(page, `id="approve-`+id) {
			t.Fatalf("after approving: %d, the form is still there:\n%s", code, page)
		}
		contains(t, "the sent question's page", page, "Approved and sent.", "Answered", `id="v1"`, `<strong class="state">sent</strong> <time datetime="`, "Three retries.")
	})
}
