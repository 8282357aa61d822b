package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
)

// askKey returns the idempotency key of the ask form on a page.
func askKey(t testing.TB, body string) string {
	t.Helper()
	m := regexp.MustCompile(`name="key" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no ask form key on the page:\n%s", body)
	}
	return m[1]
}

// mustShow fails unless every one of wants is in body.
func mustShow(t testing.TB, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Fatalf("%s: %q missing from the page:\n%s", what, w, body)
		}
	}
}

// mustNotShow fails if any of unwanted is in body.
func mustNotShow(t testing.TB, what, body string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(body, w) {
			t.Fatalf("%s: %q must not be on the page:\n%s", what, w, body)
		}
	}
}

// askedBy returns the questions a user asked, newest first, read as the page
// reads them.
func (s *site) askedBy(t testing.TB, orgID, userID string) []*inbox.AskedItem {
	t.Helper()
	items, _, err := s.Inbox.Asked(dbtest.Operator(), ctalk.Caller{OrgID: orgID, UserID: userID}, inbox.MaxListPage, "")
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// TestAskFromTheWeb: a person without an agent asks from the Asked page
// under the rules of ask_person (errors next to the field they concern, a
// repeated form asks once), sees the answer arrive, with hidden characters
// shown, and reading the page leaves the reply for their agent.
func TestAskFromTheWeb(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		s.org(t, "zeta")
		if _, err := s.Orgs.AddUser(dbtest.Operator(), "zeta", orgs.NewUser{ID: "dave", Name: "Dave", Password: userPW}); err != nil {
			t.Fatal(err)
		}
		bob := s.newClient(t, "acme", "bob")

		code, page := bob.get("/asked")
		if code != http.StatusOK {
			t.Fatalf("/asked: %d\n%s", code, page)
		}
		mustShow(t, "empty asked page", page, "You have not asked anyone yet", `<option value="alice">Alice (alice)`, `<option value="carol">`)
		mustNotShow(t, "empty asked page", page, `<option value="bob">`)

		key := askKey(t, page)
		form := url.Values{"to": {"alice"}, "text": {"What is the retry logic in alpha-repo?"}, "key": {key}}
		if code, _ := bob.postRaw("/asked", form); code != http.StatusForbidden {
			t.Fatalf("ask without CSRF: %d, want 403", code)
		}
		if n := len(s.askedBy(t, "acme", "bob")); n != 0 {
			t.Fatalf("a form without CSRF asked %d questions", n)
		}
		code, page = bob.post("/asked", form)
		mustShow(t, "after asking", page, "Your question is sent", "What is the retry logic in alpha-repo?", "Waiting for an answer", `<a href="/people/alice">Alice</a>`)
		if code != http.StatusOK {
			t.Fatalf("ask: %d", code)
		}
		// The same form again (a double click, a retry) asks nothing new.
		bob.post("/asked", form)
		items := s.askedBy(t, "acme", "bob")
		if len(items) != 1 || items[0].To != "alice" {
			t.Fatalf("after the same form twice: %d questions, want 1", len(items))
		}

		// The same form, gone back to and changed, asks nothing until sent
		// again from the fresh form the refusal shows.
		changed := url.Values{"to": {"alice"}, "text": {"And the timeout?"}, "key": {key}}
		code, page = bob.post("/asked", changed)
		if code != http.StatusConflict || askKey(t, page) == key {
			t.Fatalf("a spent form key: %d, want 409 and a fresh key", code)
		}
		mustShow(t, "a spent form key", page, `id="ask-error"`, "already used", ">And the timeout?</textarea>")
		changed.Set("key", askKey(t, page))
		if code, page = bob.post("/asked", changed); code != http.StatusOK {
			t.Fatalf("sent again from the fresh form: %d", code)
		}
		if n := len(s.askedBy(t, "acme", "bob")); n != 2 {
			t.Fatalf("%d questions, want 2", n)
		}
		items = s.askedBy(t, "acme", "bob")[1:]

		for _, tc := range []struct {
			name, to, text, field string
			status                int
		}{
			{"no text", "alice", "   ", "text-error", http.StatusBadRequest},
			{"too long", "alice", strings.Repeat("x", inbox.MaxQuestionLen+1), "text-error", http.StatusBadRequest},
			{"no one chosen", "", "hello", "to-error", http.StatusBadRequest},
			{"myself", "bob", "hello", "to-error", http.StatusBadRequest},
			{"unknown person", "zed", "hello", "to-error", http.StatusNotFound},
			{"another org's person", "dave", "hello", "to-error", http.StatusNotFound},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, page := bob.post("/asked", url.Values{"to": {tc.to}, "text": {tc.text}, "key": {askKey(t, page)}})
				if code != tc.status {
					t.Fatalf("status %d, want %d", code, tc.status)
				}
				mustShow(t, tc.name, page, `id="`+tc.field+`"`, `aria-invalid="true"`)
				if tc.text == "hello" {
					mustShow(t, tc.name, page, ">hello</textarea>")
				}
			})
		}
		if n := len(s.askedBy(t, "acme", "bob")); n != 2 {
			t.Fatalf("refused forms stored questions: %d, want 2", n)
		}

		// Alice answers with a right-to-left override in her words.
		ctx := dbtest.Operator()
		answer := "Three tries \u202eyrter\u202c, backing off."
		if _, _, err := s.Inbox.Propose(ctx, acme("alice"), items[0].ID, answer); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Inbox.Send(ctx, acme("alice"), items[0].ID, answer); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			_, page = bob.get("/asked")
			mustShow(t, "answered", page, "Answered", "Their answer", "Hidden characters shown", "⟦U&#43;202E⟧")
			mustNotShow(t, "answered", page, "\u202e")
			if n := strings.Count(page, "Withdraw this question"); n != 1 {
				t.Fatalf("%d withdraw buttons, want 1: for the one pending question", n)
			}
		}
		// Reading the page handed nothing to bob's agent.
		agent := s.agent(t, "acme", "bob")
		got := testkit.OK(t, agent, "wait_for_reply", map[string]any{"message_id": items[0].ID, "timeout_s": 1})
		if replies, _ := got["replies"].([]any); len(replies) != 1 {
			t.Fatalf("wait_for_reply after the page was read: %v, want the answer", got)
		}

		// Another org's people see none of it.
		_, page = s.newClient(t, "zeta", "bob").get("/asked")
		mustNotShow(t, "zeta's asked page", page, "retry logic", items[0].ID)
	})
}

// TestWithdrawFromTheWeb: the asker withdraws a pending question; a second
// withdrawal, the recipient, another org's member and a form without its
// CSRF token all change nothing.
func TestWithdrawFromTheWeb(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		s.org(t, "zeta")
		q, err := s.Inbox.Ask(dbtest.Operator(), acme("bob"), inbox.Ask{To: "carol", Text: "Who owns billing?"})
		if err != nil {
			t.Fatal(err)
		}
		path := "/asked/" + q.ID + "/withdraw"
		bob := s.newClient(t, "acme", "bob")

		if code, _ := bob.postRaw(path, url.Values{}); code != http.StatusForbidden {
			t.Errorf("without CSRF: %d, want 403", code)
		}
		if code, page := s.newClient(t, "acme", "carol").post(path, url.Values{}); code != http.StatusForbidden || !strings.Contains(page, "Only the person who asked") {
			t.Errorf("the recipient: %d, want 403\n%s", code, page)
		}
		if code, page := s.newClient(t, "zeta", "bob").post(path, url.Values{}); code != http.StatusNotFound || strings.Contains(page, "Who owns billing") {
			t.Errorf("another org's bob: %d, want 404\n%s", code, page)
		}
		if st := s.askedBy(t, "acme", "bob")[0].Status; st != inbox.StatusPending {
			t.Fatalf("after the refusals the question is %s, want pending", st)
		}

		code, page := bob.post(path, url.Values{})
		if code != http.StatusOK {
			t.Fatalf("withdraw: %d\n%s", code, page)
		}
		mustShow(t, "withdrawn", page, "The question is withdrawn", "Withdrawn by you")
		if st := s.askedBy(t, "acme", "bob")[0].Status; st != inbox.StatusWithdrawn {
			t.Fatalf("the question is %s, want withdrawn", st)
		}
		code, page = bob.post(path, url.Values{})
		if code != http.StatusConflict {
			t.Fatalf("withdrawing twice: %d, want 409", code)
		}
		mustShow(t, "withdrawing twice", page, "no longer waiting for an answer", `role="alert"`)

		// A question to someone since removed still shows, to a former member.
		if _, err := s.Orgs.RemoveUser(dbtest.Operator(), "acme", "carol"); err != nil {
			t.Fatal(err)
		}
		_, page = bob.get("/asked")
		mustShow(t, "asked of a former member", page, "Carol (carol, former member)", "Who owns billing?")
		mustNotShow(t, "asked of a former member", page, `href="/people/carol"`, `<option value="carol">`)
	})
}

// TestAskedPages: my questions come newest first, a page at a time, each
// once; an old or forged cursor starts again from the newest; the ask
// form's rate limit is ask_person's.
func TestAskedPages(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine, func(w *app.Wiring) { w.Inbox.AsksPerMinute, w.Inbox.LoopMax = 30, 1000 })
		s.org(t, "acme")
		ctx := dbtest.Operator()
		for i := range 25 {
			if _, err := s.Inbox.Ask(ctx, acme("bob"), inbox.Ask{To: "alice", Text: fmt.Sprintf("question number %02d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		bob := s.newClient(t, "acme", "bob")
		_, first := bob.get("/asked")
		mustShow(t, "first page", first, "question number 24", "question number 05", "Older questions")
		mustNotShow(t, "first page", first, "question number 04", "Newest questions")
		next := regexp.MustCompile(`href="/asked\?cursor=([^"]+)"`).FindStringSubmatch(first)
		if next == nil {
			t.Fatal("no link to older questions")
		}
		_, second := bob.get("/asked?cursor=" + next[1])
		mustShow(t, "second page", second, "question number 04", "question number 00", "Newest questions")
		mustNotShow(t, "second page", second, "question number 05", "Older questions")
		if code, page := bob.get("/asked?cursor=forged"); code != http.StatusOK || !strings.Contains(page, "question number 24") {
			t.Errorf("a forged cursor: %d, want the newest page", code)
		}

		// Five more reach the limit of 30 a minute; the next is refused.
		for i := range 5 {
			if _, err := s.Inbox.Ask(ctx, acme("bob"), inbox.Ask{To: "carol", Text: fmt.Sprint("more ", i)}); err != nil {
				t.Fatal(err)
			}
		}
		code, page := bob.post("/asked", url.Values{"to": {"carol"}, "text": {"one too many"}, "key": {askKey(t, first)}})
		if code != http.StatusTooManyRequests {
			t.Fatalf("over the rate: %d, want 429", code)
		}
		mustShow(t, "over the rate", page, `id="ask-error"`, "in the last minute", ">one too many</textarea>")
	})
}

// TestAskFormLooksFirst: the web app's ask form looks first, as ask_person
// does: a question that a shared answer may answer is not asked, the
// answer is shown escaped with an "Ask anyway" button that asks it; a
// person away is said so with their delegate and note, and is asked only
// anyway, or their delegate instead.
func TestAskFormLooksFirst(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		ctx := dbtest.Operator()
		bob, carol := s.newClient(t, "acme", "bob"), s.newClient(t, "acme", "carol")
		q, err := s.Inbox.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "alice"}, inbox.Ask{To: "carol", Text: "How do we rotate the gateway certificates?"})
		if err != nil {
			t.Fatal(err)
		}
		carol.post("/inbox/"+q.ID+"/answer", url.Values{"text": {"Renew the gateway certificates with certbot <b>then</b> reload."}, "share_offered": {"1"}, "share": {"yes"}})
		asked := func(want int) {
			t.Helper()
			if items, _, err := s.Inbox.Asked(ctx, ctalk.Caller{OrgID: "acme", UserID: "bob"}, 10, ""); err != nil || len(items) != want {
				t.Fatalf("bob asked %d questions (%v); want %d", len(items), err, want)
			}
		}

		_, page := bob.get("/asked")
		form := url.Values{"to": {"alice"}, "text": {"How are the gateway certificates rotated?"}, "key": {askKey(t, page)}}
		code, page := bob.post("/asked", form)
		wantStatus(t, "a question shared answers may answer", code, http.StatusOK, page)
		mustShow(t, "the look-up", page, "Not asked yet", "certbot &lt;b&gt;then&lt;/b&gt; reload", `href="/people/carol"`, `name="ask_anyway" value="1"`, "How are the gateway certificates rotated?")
		mustNotShow(t, "the look-up", page, "<b>then</b>")
		asked(0)
		form.Set("ask_anyway", "1")
		_, page = bob.post("/asked", form)
		mustShow(t, "asked anyway", page, "Your question is sent")
		asked(1)

		if _, err := s.Orgs.SetAway(ctx, ctalk.Caller{OrgID: "acme", UserID: "alice"}, orgs.Away{Until: time.Now().Add(24 * time.Hour), Delegate: "carol", Note: "at the <i>offsite</i>"}); err != nil {
			t.Fatal(err)
		}
		_, page = bob.get("/asked")
		form = url.Values{"to": {"alice"}, "text": {"Is lunch at noon today?"}, "key": {askKey(t, page)}}
		code, page = bob.post("/asked", form)
		wantStatus(t, "a question to a person away", code, http.StatusOK, page)
		mustShow(t, "away", page, "alice is away", `<a href="/people/carol">carol</a> stands in`, "at the &lt;i&gt;offsite&lt;/i&gt;", `name="ask_anyway" value="1"`, `name="instead" value="carol"`)
		asked(1)
		form.Set("instead", "carol")
		_, page = bob.post("/asked", form)
		mustShow(t, "asked the delegate", page, "Your question is sent")
		_, page = bob.get("/asked")
		form = url.Values{"to": {"alice"}, "text": {"Is lunch at one tomorrow?"}, "key": {askKey(t, page)}, "ask_anyway": {"1"}}
		_, page = bob.post("/asked", form)
		mustShow(t, "asked the away person anyway", page, "Your question is sent")
		items, _, err := s.Inbox.Asked(ctx, ctalk.Caller{OrgID: "acme", UserID: "bob"}, 10, "")
		if err != nil || len(items) != 3 || items[0].To != "alice" || items[1].To != "carol" {
			t.Fatalf("bob's questions = %v, %v; want to alice, carol, alice (newest first)", items, err)
		}
	})
}
