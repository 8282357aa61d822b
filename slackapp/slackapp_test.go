package slackapp_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/slackapp"
	"github.com/ctalk/ctalk/usecase"
)

// TestApproveInSlack: the question and its draft reach the linked
// recipient as a DM with the buttons; Approve and send sends the answer at
// once, and the DM is updated to say so, without buttons; the same
// payload again is refused, and changes nothing.
func TestApproveInSlack(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		e.link("acme", "john", "UJOHN")
		id := e.drafted("What is the retry logic in alpha-repo?", "Three tries, exponential backoff.")
		dm := e.slack.Await(t, "chat.postMessage", 1, func(c testkit.SlackCall) bool {
			return strings.Contains(c.Form.Get("blocks"), `"approve"`) && c.Form.Get("channel") == "DUJOHN"
		})[0]
		for _, want := range []string{"What is the retry logic in alpha-repo?", "Three tries, exponential backoff.", `"plain_text"`, "Open in ctalk", "/inbox/" + id, "Reject with a note", "Decline", "Answer"} {
			if !strings.Contains(dm.Form.Get("blocks"), want) {
				t.Errorf("the DM lacks %q: %s", want, dm.Form.Get("blocks"))
			}
		}
		e.stored(id, 2)
		body := press("TACME", "UJOHN", "approve", id+":1")
		if code, out := e.post(slackapp.InteractionsPath, body, acmeSecret, time.Now()); code != http.StatusOK {
			t.Fatalf("approve: %d %s", code, out)
		}
		if status, answer := e.status(id); status != "answered" || answer != "Three tries, exponential backoff." {
			t.Fatalf("after approving in Slack: %s %q", status, answer)
		}
		up := e.slack.Await(t, "chat.update", 1, func(c testkit.SlackCall) bool { return strings.Contains(c.Form.Get("blocks"), "Approved and sent") })[0]
		if blocks := up.Form.Get("blocks"); !strings.Contains(blocks, "in Slack") || strings.Contains(blocks, `"actions"`) || up.Form.Get("channel") != "DUJOHN" {
			t.Errorf("the DM once approved: %v", up.Form)
		}
		if code, _ := e.post(slackapp.InteractionsPath, body, acmeSecret, time.Now()); code != http.StatusConflict {
			t.Errorf("a replayed payload: %d, want 409", code)
		}
	})
}

// TestSignatureRefusals: a payload signed with the wrong secret, or signed
// more than 5 minutes ago, or not signed at all, decides nothing.
func TestSignatureRefusals(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		e.link("acme", "john", "UJOHN")
		id := e.drafted("Q?", "A.")
		for name, c := range map[string]struct {
			secret string
			at     time.Time
		}{
			"wrong secret":     {"not-the-signing-secret-000", time.Now()},
			"other org secret": {otherSecret, time.Now()},
			"stale":            {acmeSecret, time.Now().Add(-6 * time.Minute)},
			"future":           {acmeSecret, time.Now().Add(6 * time.Minute)},
		} {
			if code, _ := e.post(slackapp.InteractionsPath, press("TACME", "UJOHN", "approve", id+":1"), c.secret, c.at); code != http.StatusUnauthorized {
				t.Errorf("%s: %d, want 401", name, code)
			}
		}
		r, _ := http.NewRequest(http.MethodPost, e.srv.URL+slackapp.InteractionsPath, strings.NewReader(press("TACME", "UJOHN", "approve", id+":1")))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("unsigned: %d, want 401", resp.StatusCode)
		}
		if status, _ := e.status(id); status != "pending" {
			t.Errorf("after refused payloads: %s", status)
		}
	})
}

// TestOthersRefused: a Slack user not linked, a linked person to whom the
// question was not sent, and a person of another org pressing the buttons
// of a question decide nothing, and are told so where only they see it.
func TestOthersRefused(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		e.link("acme", "john", "UJOHN")
		e.link("acme", "umar", "UUMAR")
		e.link("other", "olga", "UOLGA")
		id := e.drafted("Q?", "A.")
		cases := []struct {
			name, team, user, secret string
		}{
			{"not linked", "TACME", "USTRANGER", acmeSecret},
			{"not the recipient", "TACME", "UUMAR", acmeSecret},
			{"another org", "TOTHER", "UOLGA", otherSecret},
		}
		for i, c := range cases {
			code, out := e.post(slackapp.InteractionsPath, press(c.team, c.user, "approve", id+":1"), c.secret, time.Now())
			if code != http.StatusOK {
				t.Errorf("%s: %d %s", c.name, code, out)
			}
			eph := e.slack.Await(t, "chat.postEphemeral", i+1, nil)[i]
			if eph.Form.Get("user") != c.user || !strings.Contains(eph.Form.Get("text"), "Nothing") && !strings.Contains(eph.Form.Get("text"), "not linked") {
				t.Errorf("%s: the refusal %v", c.name, eph.Form)
			}
			if c.name == "another org" && !strings.Contains(eph.Form.Get("text"), "not") {
				t.Errorf("another org: %q", eph.Form.Get("text"))
			}
		}
		if status, _ := e.status(id); status != "pending" {
			t.Errorf("after others pressed: %s", status)
		}
	})
}

// TestPasskeyFactorHolds: where the org asks for a passkey for every
// approval, the DM offers only Open in ctalk, and a press of an older
// DM's Approve decides nothing.
func TestPasskeyFactorHolds(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		e.link("acme", "john", "UJOHN")
		if _, err := e.srv.Orgs.SetSettings(dbtest.Operator(), "acme", orgs.Settings{ApprovalFactor: orgs.FactorPasskey}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // the org cache's second
		id := e.drafted("Q?", "A.")
		dm := e.slack.Await(t, "chat.postMessage", 2, nil)[1]
		if blocks := dm.Form.Get("blocks"); strings.Contains(blocks, `"approve"`) || !strings.Contains(blocks, "Open in ctalk") {
			t.Errorf("the DM under the passkey factor: %s", blocks)
		}
		if code, _ := e.post(slackapp.InteractionsPath, press("TACME", "UJOHN", "approve", id+":1"), acmeSecret, time.Now()); code != http.StatusOK {
			t.Errorf("press: %d", code)
		}
		eph := e.slack.Await(t, "chat.postEphemeral", 1, nil)[0]
		if !strings.Contains(eph.Form.Get("text"), "passkey") {
			t.Errorf("the refusal: %q", eph.Form.Get("text"))
		}
		if status, _ := e.status(id); status != "pending" {
			t.Errorf("approved without a passkey: %s", status)
		}
	})
}

// TestModalsAndThreadReplies: Edit opens a modal prefilled with the draft,
// whose submission sends the edited text; a reply in the DM's thread is a
// new draft, never an approval; the events URL's verification is answered.
func TestModalsAndThreadReplies(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		e.link("acme", "john", "UJOHN")
		id := e.drafted("Q?", "The agent's draft.")
		dm := e.slack.Await(t, "chat.postMessage", 1, func(c testkit.SlackCall) bool { return strings.Contains(c.Form.Get("blocks"), `"approve"`) })[0]
		_ = dm
		e.post(slackapp.InteractionsPath, press("TACME", "UJOHN", "edit", id+":1"), acmeSecret, time.Now())
		view := e.slack.Await(t, "views.open", 1, nil)[0]
		if !strings.Contains(view.Form.Get("view"), "The agent's draft.") || view.Form.Get("trigger_id") == "" {
			t.Errorf("the edit modal: %v", view.Form)
		}
		// A reply in the thread of the DM: the DM's ts is the stand-in's first after the link's.
		var thread string
		if err := d.QueryRow(dbtest.Operator(), `SELECT ts FROM slack_messages WHERE message_id = $1`, id).Scan(&thread); err != nil {
			t.Fatal(err)
		}
		event := `{"type":"event_callback","team_id":"TACME","event_id":"Ev1","event":{"type":"message","channel_type":"im","channel":"DUJOHN","user":"UJOHN","text":"Four tries &amp; jitter","thread_ts":"` + thread + `","ts":"1700000001.000001"}}`
		if code, out := e.post(slackapp.EventsPath, event, acmeSecret, time.Now()); code != http.StatusOK {
			t.Fatalf("event: %d %s", code, out)
		}
		e.post(slackapp.EventsPath, event, acmeSecret, time.Now()) // Slack's retry: ignored
		r, err := e.srv.Inbox.Review(dbtest.Operator(), caller("acme", "john"), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != "pending" || r.DraftCount != 2 || r.Latest().Text != "Four tries & jitter" {
			t.Fatalf("after the thread reply: %s, %d drafts, latest %q", r.Status, r.DraftCount, r.Latest().Text)
		}
		code, out := e.post(slackapp.InteractionsPath, submit("TACME", "UJOHN", "edit", id+":2", "Four tries, with jitter."), acmeSecret, time.Now())
		if code != http.StatusOK || out != "" {
			t.Fatalf("submit: %d %s", code, out)
		}
		if status, answer := e.status(id); status != "answered" || answer != "Four tries, with jitter." {
			t.Errorf("after the edit: %s %q", status, answer)
		}
		challenge := `{"type":"url_verification","token":"x","challenge":"c-123"}`
		if code, out := e.post(slackapp.EventsPath, challenge, acmeSecret, time.Now()); code != http.StatusOK || out != "c-123" {
			t.Errorf("url_verification: %d %q", code, out)
		}
		if code, _ := e.post(slackapp.EventsPath, challenge, "wrong-secret-0000000000", time.Now()); code != http.StatusUnauthorized {
			t.Errorf("url_verification unsigned: %d", code)
		}
	})
}

// TestDecidedElsewhereUpdatesSlack: a decision in the web app, or the
// agent's decline_question, updates the DM to say so; of a Slack approval racing the web app's, exactly one
// sends the answer.
func TestDecidedElsewhereUpdatesSlack(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		e.link("acme", "john", "UJOHN")
		var sent atomic.Int64
		e.srv.Answers.OnDecided(func(_ context.Context, dd usecase.Decided) {
			if dd.Kind == usecase.Approve || dd.Kind == usecase.Send {
				sent.Add(1)
			}
		})
		for round := range 6 {
			id := e.drafted("Q?", "A.")
			e.slack.Await(t, "chat.postMessage", 1, func(c testkit.SlackCall) bool { return strings.Contains(c.Form.Get("blocks"), id) })
			var wg sync.WaitGroup
			wg.Go(func() {
				e.post(slackapp.InteractionsPath, press("TACME", "UJOHN", "approve", id+":1"), acmeSecret, time.Now())
			})
			wg.Go(func() {
				if round%2 == 0 {
					_, _ = e.srv.Answers.Decide(dbtest.Operator(), caller("acme", "john"), usecase.Decision{Kind: usecase.Approve, MessageID: id, Version: 1})
				} else {
					_, _ = e.srv.Answers.Send(dbtest.Operator(), caller("acme", "john"), id, "A.", nil)
				}
			})
			wg.Wait()
			if got := sent.Swap(0); got != 1 {
				t.Fatalf("round %d: %d answers sent, want exactly 1", round, got)
			}
			if status, _ := e.status(id); status != "answered" {
				t.Fatalf("round %d: %s", round, status)
			}
		}
		id := e.drafted("Q2?", "A2.")
		e.stored(id, 2)
		if _, err := e.srv.Answers.Decide(dbtest.Operator(), caller("acme", "john"), usecase.Decision{Kind: usecase.Decline, MessageID: id, Text: "Not mine."}); err != nil {
			t.Fatal(err)
		}
		e.slack.Await(t, "chat.update", 1, func(c testkit.SlackCall) bool {
			b := c.Form.Get("blocks")
			return strings.Contains(b, "A2.") && strings.Contains(b, "Declined* in ctalk")
		})

		// The agent's decline_question, over MCP, updates the DM too.
		id3 := e.drafted("Q3?", "A3.")
		e.stored(id3, 1)
		token, _, err := e.srv.Auth.IssueLocalToken(dbtest.Operator(), "acme", "john", "test agent")
		if err != nil {
			t.Fatal(err)
		}
		agent := testkit.Connect(t, e.srv.URL, testkit.EraStateless, token)
		testkit.OK(t, agent, "decline_question", map[string]any{"message_id": id3, "reason": "Ask Kim."})
		e.slack.Await(t, "chat.update", 1, func(c testkit.SlackCall) bool {
			b := c.Form.Get("blocks")
			return strings.Contains(b, "A3.") && strings.Contains(b, "Declined* by your agent")
		})
		// Each DM was updated once, by the decision's own update: the
		// send's late settling, which does not know where, found it done.
		time.Sleep(2 * settleGrace)
		for _, answer := range []string{"A2.", "A3."} {
			updatedOnce(t, e, answer)
		}
	})
}

// updatedOnce checks that each DM showing answer was updated once.
func updatedOnce(t *testing.T, e *env, answer string) {
	t.Helper()
	updates := map[string]int{} // by the DM's ts
	for _, c := range e.slack.Of("chat.update") {
		if strings.Contains(c.Form.Get("blocks"), answer) {
			updates[c.Form.Get("ts")]++
		}
	}
	for ts, n := range updates {
		if n != 1 {
			t.Errorf("the DM %s showing %q was updated %d times, want once", ts, answer, n)
		}
	}
}

// TestDecidedWhileTheDMWasOnItsWay declines a question while Slack holds
// the DM's post. Mostly the decision's own update, run at once, finds no
// DM to update, and the send, finding the question decided once it has
// stored the DM, settles it after its grace, saying what was decided but
// not where; when the update runs after the DM was stored (it runs in the
// background), it settles it itself, saying where. Either way the DM is
// updated, once.
func TestDecidedWhileTheDMWasOnItsWay(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		e.link("acme", "john", "UJOHN")
		arrived, release := e.slack.Hold(t, "chat.postMessage")
		id := e.drafted("Q?", "A.")
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatal("the DM was not posted")
		}
		if _, err := e.srv.Answers.Decide(dbtest.Operator(), caller("acme", "john"), usecase.Decision{Kind: usecase.Decline, MessageID: id, Text: "Not mine."}); err != nil {
			t.Fatal(err)
		}
		release()
		e.stored(id, 1)
		e.slack.Await(t, "chat.update", 1, func(c testkit.SlackCall) bool {
			b := c.Form.Get("blocks")
			return strings.Contains(b, "A.") && (strings.Contains(b, "*Declined*,") || strings.Contains(b, "*Declined* in ctalk"))
		})
		time.Sleep(settleGrace)
		updatedOnce(t, e, "A.")
	})
}

// TestRateLimitedDeliveryWaits: Slack's 429 with Retry-After delays an
// update of a DM by that long, and does not lose it: every DM of the
// question is updated.
func TestRateLimitedDeliveryWaits(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d, "chat.update")
		e.link("acme", "john", "UJOHN")
		id := e.drafted("Q?", "A.")
		e.slack.Await(t, "chat.postMessage", 1, func(c testkit.SlackCall) bool { return strings.Contains(c.Form.Get("blocks"), `"approve"`) })
		if code, _ := e.post(slackapp.InteractionsPath, press("TACME", "UJOHN", "approve", id+":1"), acmeSecret, time.Now()); code != http.StatusOK {
			t.Fatal(code)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			var open, sent int
			if err := d.QueryRow(dbtest.Operator(), `SELECT COUNT(*) - COUNT(settled_at), COUNT(*) FROM slack_messages WHERE message_id = $1`, id).Scan(&open, &sent); err != nil {
				t.Fatal(err)
			}
			if open == 0 && len(e.slack.Of("chat.update")) >= sent {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d DMs not updated after a 429", open, sent)
			}
			time.Sleep(20 * time.Millisecond)
		}
		limited := e.slack.Limited("chat.update")
		if limited.IsZero() {
			t.Fatal("the stand-in never answered 429")
		}
		var last time.Time
		for _, c := range e.slack.Of("chat.update") {
			if c.At.After(last) {
				last = c.At
			}
		}
		if waited := last.Sub(limited); waited < 900*time.Millisecond {
			t.Errorf("the update refused with Retry-After: 1 was tried again %s later", waited)
		}
	})
}

// TestRemovedMemberUnlinked: removing a member forgets their Slack link,
// so that no button of theirs acts any more.
func TestRemovedMemberUnlinked(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		e.link("acme", "umar", "UUMAR")
		if _, err := e.srv.Orgs.RemoveUser(dbtest.Operator(), "acme", "umar"); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			l, err := e.srv.Slack.LinkOf(dbtest.Operator(), caller("acme", "umar"))
			if err != nil {
				t.Fatal(err)
			}
			if l == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("a removed member's Slack link is kept")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// TestWithdrawnAndForwardedUpdateSlack: a question withdrawn by its asker,
// or forwarded by its recipient, is said so in the recipient's DM, whose
// buttons go; the new recipient's own DM is left alone.
func TestWithdrawnAndForwardedUpdateSlack(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		e.link("acme", "john", "UJOHN")
		e.link("acme", "kim", "UKIM")
		ctx := dbtest.Operator()
		withdrawn := e.drafted("Withdrawn?", "W.")
		e.slack.Await(t, "chat.postMessage", 1, func(c testkit.SlackCall) bool { return strings.Contains(c.Form.Get("blocks"), "W.") })
		if _, err := e.srv.Inbox.Withdraw(ctx, caller("acme", "umar"), withdrawn); err != nil {
			t.Fatal(err)
		}
		e.slack.Await(t, "chat.update", 1, func(c testkit.SlackCall) bool {
			return strings.Contains(c.Form.Get("blocks"), "Withdrawn by the asker") && !strings.Contains(c.Form.Get("blocks"), `"actions"`)
		})
		forwarded := e.drafted("Forwarded?", "F.")
		e.slack.Await(t, "chat.postMessage", 1, func(c testkit.SlackCall) bool { return strings.Contains(c.Form.Get("blocks"), "F.") })
		if _, err := e.srv.Inbox.Forward(ctx, caller("acme", "john"), forwarded, "kim", "yours"); err != nil {
			t.Fatal(err)
		}
		up := e.slack.Await(t, "chat.update", 1, func(c testkit.SlackCall) bool {
			return strings.Contains(c.Form.Get("blocks"), "Forwarded to someone else")
		})[0]
		if up.Form.Get("channel") != "DUJOHN" {
			t.Errorf("the forward updated %s's DM", up.Form.Get("channel"))
		}
		kims := e.slack.Await(t, "chat.postMessage", 1, func(c testkit.SlackCall) bool {
			return c.Form.Get("channel") == "DUKIM" && strings.Contains(c.Form.Get("blocks"), "Forwarded?")
		})[0]
		time.Sleep(200 * time.Millisecond)
		for _, u := range e.slack.Of("chat.update") {
			if u.Form.Get("channel") == kims.Form.Get("channel") {
				t.Errorf("the new recipient's DM was updated: %v", u.Form)
			}
		}
	})
}
