package web_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/ctalk/ctalk/db"
)

// TestDecideOnAPhone: the page a notification of a draft opens shows, on a
// 390x844 phone, the question, the draft and "Approve and send" above the
// fold, and pressing it delivers the answer to the asker.
func TestDecideOnAPhone(t *testing.T) {
	t.Parallel()
	inChromium(t, func(t *testing.T, chromium context.Context, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		id := s.ask(t, "alice", "bob", "Which region hosts the billing database?")
		s.propose(t, id, "It runs in eu-west-1.")
		ctx := browser(t, chromium)
		signIn(t, ctx, s.URL, "acme", "bob")
		run(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.URL+"/inbox/"+id+"#v1"),
			chromedp.WaitVisible(chromedp.ID("approve-"+id)))
		got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => {
			const above = el => { if (!el) return false; const r = el.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; };
			const find = s => [...document.querySelectorAll("main *")].find(e => e.children.length === 0 && e.textContent.includes(s));
			return {question: above(find("billing database")), draft: above(find("eu-west-1")),
				button: above(document.getElementById(`+"`approve-"+id+"`"+`))};
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"question", "draft", "button"} {
			if got[k] != true {
				t.Errorf("on a 390x844 phone the %s is not above the fold (%v)", k, got)
			}
		}
		run(t, ctx, chromedp.Click(chromedp.ID("approve-"+id)), chromedp.WaitVisible(chromedp.CSS(`.flash[role="status"]`)))
		items := s.askedBy(t, "acme", "alice")
		if len(items) != 1 || items[0].Status != "answered" || items[0].Answer != "It runs in eu-west-1." {
			t.Fatalf("after approving on the phone, alice sees %d questions: %+v", len(items), items)
		}
	})
}
