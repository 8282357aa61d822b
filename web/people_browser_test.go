package web_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ctalk/ctalk/db"
)

// tabUntil presses Tab until the element in focus matches the CSS selector,
// as a person without a mouse moves through a page.
func tabUntil(selector string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		js := fmt.Sprintf(`document.activeElement !== null && document.activeElement.matches(%q)`, selector)
		for range 60 {
			if _, err := chromedp.KeyEvent(kb.Tab)(ctx, tg); err != nil {
				return err
			}
			ok, err := chromedp.Evaluate[bool](js)(ctx, tg)
			if err != nil {
				return err
			}
			if ok {
				return nil
			}
		}
		return fmt.Errorf("no %s reached with Tab", selector)
	})
}

// TestPeopleByKeyboard: with the keyboard only, a person signs in, opens
// People, opens a coworker's profile, goes to their own profile and saves
// their notes.
func TestPeopleByKeyboard(t *testing.T) {
	t.Parallel()
	inChromium(t, func(t *testing.T, chromium context.Context, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		ctx := browser(t, chromium)
		signIn(t, ctx, s.URL, "acme", "bob")
		const notes = "I own billing; ask me about invoices."
		err := chromedp.Do(ctx,
			tabUntil(`nav a[href="/people"]`), chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.CSS(`ul.people`)),
			tabUntil(`a[href="/people/alice"]`), chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.Search(`//h1[text()="Alice"]`)),
			chromedp.WaitVisible(chromedp.Search(`//p[contains(., "have not asked each other")]`)),
			tabUntil(`nav a[href="/people"]`), chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.CSS(`ul.people`)),
			tabUntil(`a[href="/profile"]`), chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.ID(`notes`)),
			tabUntil(`#notes`), chromedp.KeyEvent(notes),
			tabUntil(`form[action="/profile/notes"] button`), chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.CSS(`p.flash`)),
		)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.member(t, "acme", "bob").Notes; got != notes {
			t.Fatalf("bob's notes = %q, want %q", got, notes)
		}
	})
}
