package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/orgs"
)

// TestInviteAndResetInBrowser: in Chromium, with the keyboard, an invitee
// opens the mailed link, chooses a password and is signed in; a member who
// forgot theirs follows "Forgot password?" from the sign-in page, opens the
// mailed link and is signed in with the new one.
func TestInviteAndResetInBrowser(t *testing.T) {
	t.Parallel()
	inChromium(t, func(t *testing.T, chromium context.Context, engine db.Engine) {
		box := mailtest.Start(t)
		s := start(t, engine, withMail(box))
		s.org(t, "acme")
		ctx := dbtest.Operator()
		if _, err := s.Access.Invite(ctx, acme("alice"), orgs.NewInvite{Email: "dan@example.com", UserID: "dan", Name: "Dan"}); err != nil {
			t.Fatal(err)
		}
		invite := linkIn(t, box.WaitFor(t, 1)[0], "invite")
		dan := browser(t, chromium)
		run(t, dan,
			chromedp.Navigate(s.URL+invite),
			chromedp.WaitVisible(chromedp.ID("password")),
			chromedp.KeyEvent("dans-password"),
			chromedp.KeyEvent(kb.Tab),
			chromedp.KeyEvent("dans-password"),
			chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.CSS("header.top")),
		)
		if who := text(t, dan, ".who span"); who != "dan · acme" {
			t.Errorf("the invitee is signed in as %q", who)
		}

		if _, err := s.Orgs.SetEmail(ctx, "acme", "bob", "bob@example.com"); err != nil {
			t.Fatal(err)
		}
		bob := browser(t, chromium)
		run(t, bob,
			chromedp.Navigate(s.URL+"/signin"),
			chromedp.WaitVisible(chromedp.CSS(`a[href="/forgot"]`)),
			chromedp.Click(chromedp.CSS(`a[href="/forgot"]`)),
			chromedp.WaitVisible(chromedp.ID("org_id")),
			chromedp.KeyEvent("acme"),
			chromedp.KeyEvent(kb.Tab),
			chromedp.KeyEvent("bob@example.com"),
			chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.CSS(`p[role="status"]`)),
		)
		if said := text(t, bob, `p[role="status"]`); !strings.Contains(said, "is on its way") {
			t.Errorf("after asking: %q", said)
		}
		reset := linkIn(t, box.WaitFor(t, 2)[1], "reset")
		run(t, bob,
			chromedp.Navigate(s.URL+reset),
			chromedp.WaitVisible(chromedp.ID("password")),
			chromedp.KeyEvent("bobs-new-password"),
			chromedp.KeyEvent(kb.Tab),
			chromedp.KeyEvent("bobs-new-password"),
			chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.CSS(".flash")),
		)
		if flashed := text(t, bob, ".flash"); !strings.Contains(flashed, "Your new password is set") {
			t.Errorf("after the reset: %q", flashed)
		}
		if _, _, err := s.Auth.SignIn(ctx, "acme", "bob", "bobs-new-password", "127.0.0.1"); err != nil {
			t.Errorf("the new password: %v", err)
		}
	})
}
