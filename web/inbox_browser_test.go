package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestInboxInABrowser drives the inbox in Chromium, by keyboard, in human
// approval mode: a person signs in from the approval link their agent
// received, sees the question and approves the draft, and the asker's
// agent, waiting in wait_for_reply, receives exactly that text once the
// answering agent sends it. Then edit-and-approve, reject with a note,
// decline and answer directly, each in a browser context of its own.
func TestInboxInABrowser(t *testing.T) {
	t.Parallel()
	inChromium(t, func(t *testing.T, chromium context.Context, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		if _, err := s.Orgs.SetApprovalMode(dbtest.Operator(), "acme", "human"); err != nil {
			t.Fatal(err)
		}
		asker, answerer := s.agent(t, "acme", "alice"), s.agent(t, "acme", "bob")
		flow := &inboxFlow{s: s, chromium: chromium, asker: asker, answerer: answerer}
		t.Run("approve", flow.approve)
		t.Run("edit", flow.edit)
		t.Run("reject", flow.reject)
		t.Run("decline", flow.decline)
		t.Run("answer", flow.answer)
	})
}

// inboxFlow is one site with alice's agent asking and bob's answering.
type inboxFlow struct {
	s               *site
	chromium        context.Context
	asker, answerer *mcp.ClientSession
}

// question has alice's agent ask bob, bob's agent propose draft (unless it
// is empty), and alice's agent wait for the reply; it returns the question,
// the approval_url and the reply to come.
func (f *inboxFlow) question(t *testing.T, text, draft string) (id, link string, reply <-chan map[string]any) {
	t.Helper()
	id = testkit.OK(t, f.asker, "ask_person", map[string]any{"to_user_id": "bob", "question": text})["message_id"].(string)
	if draft != "" {
		link = testkit.OK(t, f.answerer, "propose_response", map[string]any{"message_id": id, "draft_text": draft})["approval_url"].(string)
	}
	got := make(chan map[string]any, 1)
	go func() {
		ctx, cancel := context.WithTimeout(dbtest.Operator(), 60*time.Second)
		defer cancel()
		res, err := testkit.CallTool(ctx, f.asker, "wait_for_reply", map[string]any{"message_id": id, "timeout_s": 50})
		if err != nil {
			t.Errorf("wait_for_reply: %v", err)
		}
		got <- res
	}()
	return id, link, got
}

// received is the one reply alice's agent was waiting for.
func received(t *testing.T, reply <-chan map[string]any) map[string]any {
	t.Helper()
	select {
	case res := <-reply:
		if rs, _ := res["replies"].([]any); len(rs) == 1 {
			return rs[0].(map[string]any)
		}
		t.Fatalf("wait_for_reply = %v, want one reply", res)
	case <-time.After(55 * time.Second):
		t.Fatal("wait_for_reply did not return")
	}
	return nil
}

// page is bob's signed-in browser on the page of question id.
func (f *inboxFlow) page(t *testing.T, id string) context.Context {
	t.Helper()
	ctx := browser(t, f.chromium)
	signIn(t, ctx, f.s.URL, "acme", "bob")
	run(t, ctx, chromedp.Navigate(f.s.URL+"/inbox/"+id), chromedp.WaitVisible(chromedp.CSS("#question")))
	return ctx
}

func run(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// text is the visible text of the first element sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// fill opens a form's box by keyboard, types text in its field (emptied
// first when clear), tabs to its button and presses it, and returns the
// flash of the page it lands on.
func fill(t *testing.T, ctx context.Context, box, id, typed string, clear bool) string {
	t.Helper()
	field := map[string]string{"edit": "#edit-", "reject": "#note-", "answer": "#answer-", "decline": "#reason-"}[box] + id
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.Focus(chromedp.CSS("#" + box + "-box-" + id + " > summary")),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(field)),
		chromedp.KeyEvent(kb.Tab),
	}
	if clear {
		steps = append(steps, chromedp.Clear(chromedp.CSS(field)))
	}
	steps = append(steps, chromedp.KeyEvent(typed), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(".flash")))
	run(t, ctx, steps...)
	return text(t, ctx, ".flash")
}

func (f *inboxFlow) approve(t *testing.T) {
	const draft = "Three retries with exponential backoff."
	id, link, reply := f.question(t, "What is the retry logic in alpha-repo?", draft)
	if !strings.HasPrefix(link, f.s.URL+"/inbox/"+id+"#v1") {
		t.Fatalf("approval_url = %q", link)
	}
	// The link asks for sign-in, then shows the question and the draft.
	ctx := browser(t, f.chromium)
	run(t, ctx,
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.ID("org_id")),
		chromedp.SendKeys(chromedp.ID("org_id"), "acme"),
		chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent("bob"),
		chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(userPW),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS("#question")),
	)
	question, shown := text(t, ctx, "#question > blockquote.text"), text(t, ctx, "#v1 blockquote.text")
	if question != "What is the retry logic in alpha-repo?" || shown != draft {
		t.Fatalf("the page shows question %q and draft %q", question, shown)
	}
	testkit.Fail(t, f.answerer, "send_response", map[string]any{"message_id": id, "final_text": draft}, "not approved yet")
	tabTo(t, ctx, "approve-"+id)
	run(t, ctx, chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(".flash")))
	if flash := text(t, ctx, ".flash"); !strings.Contains(flash, "Approved and sent") {
		t.Fatalf("after approving, the page says %q", flash)
	}
	// The approval sent the answer: the asker's agent has it with no call
	// of bob's agent, whose send afterwards sends nothing more.
	if r := received(t, reply); r["answer"] != draft || r["resolved_by"] != "bob" {
		t.Fatalf("the asker's agent received %v, want exactly %q", r, draft)
	}
	if sent := testkit.OK(t, f.answerer, "send_response", map[string]any{"message_id": id, "final_text": draft}); !strings.HasPrefix(sent["next_step"].(string), "already sent") {
		t.Fatalf("send_response after the approval = %v", sent)
	}
}

func (f *inboxFlow) edit(t *testing.T) {
	id, _, reply := f.question(t, "Which day is the freeze?", "Monday")
	ctx := f.page(t, id)
	// Typed over two lines: the browser posts CRLF, the agent sends LF.
	const mine = "Monday,\nfrom 9:00 UTC"
	if flash := fill(t, ctx, "edit", id, mine, true); !strings.Contains(flash, "Your version is sent") {
		t.Fatalf("after editing, the page says %q", flash)
	}
	if r := received(t, reply); r["answer"] != mine {
		t.Fatalf("the asker's agent received %v, want exactly %q", r, mine)
	}
	for _, q := range testkit.OK(t, f.answerer, "check_inbox", nil)["questions"].([]any) {
		if q.(map[string]any)["message_id"] == id {
			t.Fatalf("the agent's inbox still lists the answered question: %v", q)
		}
	}
	testkit.Fail(t, f.answerer, "send_response", map[string]any{"message_id": id, "final_text": "Monday"}, `"Monday,\nfrom 9:00 UTC"`)
}

func (f *inboxFlow) reject(t *testing.T) {
	id, _, _ := f.question(t, "Can I deploy today?", "Yes")
	ctx := f.page(t, id)
	const note = "Say that the freeze starts Monday"
	if flash := fill(t, ctx, "reject", id, note, false); !strings.Contains(flash, "Rejected") {
		t.Fatalf("after rejecting, the page says %q", flash)
	}
	q := testkit.OK(t, f.answerer, "check_inbox", nil)["questions"].([]any)
	latest := q[len(q)-1].(map[string]any)["latest_draft"].(map[string]any)
	if latest["rejected_by_person"] != true || latest["rejection_note"] != note {
		t.Fatalf("the agent's inbox shows the draft %v", latest)
	}
	testkit.Fail(t, f.answerer, "send_response", map[string]any{"message_id": id, "final_text": "Yes"}, note)
	testkit.OK(t, f.answerer, "decline_question", map[string]any{"message_id": id, "reason": "cleaning up"})
}

func (f *inboxFlow) decline(t *testing.T) {
	id, _, reply := f.question(t, "Can you review my PR?", "")
	ctx := f.page(t, id)
	if flash := fill(t, ctx, "decline", id, "Ask carol, she owns it", false); !strings.Contains(flash, "Declined") {
		t.Fatalf("after declining, the page says %q", flash)
	}
	if r := received(t, reply); r["status"] != "declined" || r["decline_reason"] != "Ask carol, she owns it" {
		t.Fatalf("the asker's agent received %v", r)
	}
}

func (f *inboxFlow) answer(t *testing.T) {
	const mine = "Yes, I own billing."
	id, _, reply := f.question(t, "Who owns billing?", "Probably carol")
	ctx := f.page(t, id)
	if flash := fill(t, ctx, "answer", id, mine, false); !strings.Contains(flash, "Sent") {
		t.Fatalf("after answering, the page says %q", flash)
	}
	if r := received(t, reply); r["answer"] != mine || r["resolved_by"] != "bob" {
		t.Fatalf("the asker's agent received %v, want exactly %q", r, mine)
	}
	testkit.Fail(t, f.answerer, "send_response", map[string]any{"message_id": id, "final_text": "Probably carol"}, "already answered")
}

// tabTo presses Tab from where the focus is until the element with id
// has it, as a person with only a keyboard does: it fails when the focus
// order never reaches the element.
func tabTo(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	for range 60 {
		focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement ? document.activeElement.id : ""`))
		if err != nil {
			t.Fatal(err)
		}
		if focused == id {
			return
		}
		run(t, ctx, chromedp.KeyEvent(kb.Tab))
	}
	t.Fatalf("60 presses of Tab never reached #%s", id)
}
