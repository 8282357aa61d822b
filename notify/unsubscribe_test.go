package notify_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/notify"
)

// TestUnsubscribeTurnsOffOnlyThatKind posts the one-click unsubscribe of
// a question mail with no cookie: questions stop coming by email, drafts
// still come, and a changed token does nothing.
func TestUnsubscribeTurnsOffOnlyThatKind(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		srv := mailtest.Start(t)
		s := newService(t, d, srv)
		h := s.UnsubscribeHandler()
		queue(t, d, s, question("q_1"))
		drain(t, s)
		lu := srv.WaitFor(t, 1)[0].Header.Get("List-Unsubscribe")
		link := strings.TrimSuffix(strings.TrimPrefix(lu, "<"), ">")
		path := strings.TrimPrefix(link, "https://ctalk.test")

		post := func(path string) int {
			req := httptestRequest(http.MethodPost, path, "List-Unsubscribe=One-Click")
			rec := newRecorder()
			h.ServeHTTP(rec, req)
			return rec.Code
		}
		if c := post(path[:len(path)-2] + "xx"); c != http.StatusBadRequest {
			t.Fatalf("a changed token answered %d, want 400", c)
		}
		get := httptestRequest(http.MethodGet, path, "")
		rec := newRecorder()
		h.ServeHTTP(rec, get)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET answered %d", rec.Code)
		}
		set, err := s.Settings(dbtest.Operator(), ctalk.Caller{OrgID: "acme", UserID: "b"})
		if err != nil {
			t.Fatal(err)
		}
		if got := set.Channels[notify.KindQuestion]; len(got) != 3 {
			t.Fatalf("a GET (a mail scanner following the link) changed the settings: %v", got)
		}
		if c := post(path); c != http.StatusOK {
			t.Fatalf("the one-click POST answered %d", c)
		}
		set, _ = s.Settings(dbtest.Operator(), ctalk.Caller{OrgID: "acme", UserID: "b"})
		if got := set.Channels[notify.KindQuestion]; len(got) != 2 || got[0] != notify.ChannelWebhook || got[1] != notify.ChannelPush {
			t.Fatalf("question channels after unsubscribe = %v, want webhook and push", got)
		}
		if got := set.Channels[notify.KindDraft]; len(got) != 3 {
			t.Fatalf("draft channels changed to %v", got)
		}
		queue(t, d, s, question("q_2"))
		draft := question("q_2")
		draft.Kind = notify.KindDraft
		queue(t, d, s, draft)
		drain(t, s)
		got := srv.WaitFor(t, 2)
		if len(got) != 2 || got[1].Header.Get("Subject") != "Your agent's answer to Ann waits for your approval" {
			t.Fatalf("after unsubscribing from questions: %d mails, last %q", len(got), got[len(got)-1].Header.Get("Subject"))
		}
		// A draft's mail says what pressing will do.
		const action = "approving sends exactly that text to Ann at once"
		if !strings.Contains(got[1].Text, action) || !strings.Contains(got[1].HTML, action) {
			t.Errorf("the draft's mail does not say what approving does:\n%s", got[1].Text)
		}
	})
}

// TestUnsubscribeLinkIsSealedAndBounded: an unsubscribe link shows no id;
// the same link with another kind put in, its sealed part unchanged, does
// nothing; after a year it no longer works, and a day before it does.
func TestUnsubscribeLinkIsSealedAndBounded(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(t, d, mailtest.Start(t))
		h := s.UnsubscribeHandler()
		bo := ctalk.Caller{OrgID: "acme", UserID: "b"}
		link := s.UnsubscribeURL("acme", "b", notify.KindQuestion)
		path := strings.TrimPrefix(link, "https://ctalk.test")
		token := path[strings.Index(path, "?t=")+3:]
		kind, sealed, _ := strings.Cut(token, ".")
		raw, _ := base64.RawURLEncoding.DecodeString(sealed)
		if kind != "question" || strings.Contains(token, "acme") || strings.Contains(string(raw), "acme") {
			t.Fatalf("the link %s shows whom it is for", link)
		}
		post := func(path string) (int, string) {
			rec := newRecorder()
			h.ServeHTTP(rec, httptestRequest(http.MethodPost, path, "List-Unsubscribe=One-Click"))
			return rec.Code, rec.Body.String()
		}
		unchanged := func(when string) {
			t.Helper()
			set, err := s.Settings(dbtest.Operator(), bo)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []notify.Kind{notify.KindQuestion, notify.KindReminder} {
				if got := set.Channels[k]; len(got) != 3 {
					t.Fatalf("%s: %s channels = %v, want every one", when, k, got)
				}
			}
		}
		swapped := strings.Replace(path, "?t=question.", "?t=reminder.", 1)
		if code, _ := post(swapped); code != http.StatusBadRequest {
			t.Errorf("the link with another kind answered %d, want 400", code)
		}
		unchanged("after the link with another kind")
		real := d.Now
		t.Cleanup(func() { d.Now = real })
		d.Now = func() time.Time { return real().Add(notify.UnsubscribeTTL + time.Minute) }
		if code, body := post(path); code != http.StatusBadRequest || !strings.Contains(body, "more than a year old") {
			t.Errorf("a link older than a year answered %d: %s", code, body)
		}
		unchanged("after a link older than a year")
		d.Now = func() time.Time { return real().Add(notify.UnsubscribeTTL - 24*time.Hour) }
		if code, body := post(path); code != http.StatusOK {
			t.Fatalf("a link a day short of a year answered %d: %s", code, body)
		}
		set, _ := s.Settings(dbtest.Operator(), bo)
		if got := set.Channels[notify.KindQuestion]; len(got) != 2 {
			t.Errorf("question channels after unsubscribing = %v, want webhook and push", got)
		}
	})
}
