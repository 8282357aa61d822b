package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestAdminAddsMemberInBrowser: in Chromium, with the keyboard, an admin
// adds a member, who signs in in a browser of their own; the admin then
// removes them, confirming it on the page that asks, and the member's next
// page is the sign-in.
func TestAdminAddsMemberInBrowser(t *testing.T) {
	t.Parallel()
	inChromium(t, func(t *testing.T, chromium context.Context, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		admin := browser(t, chromium)
		signIn(t, admin, s.URL, "acme", "alice")
		err := chromedp.Do(admin,
			chromedp.Navigate(s.URL+"/admin"),
			chromedp.WaitVisible(chromedp.ID("new-user-id")),
			chromedp.Focus(chromedp.ID("new-user-id")),
			chromedp.KeyEvent("dave"),
			chromedp.KeyEvent(kb.Tab),
			chromedp.KeyEvent("Dave Doe"),
			chromedp.KeyEvent(kb.Tab),
			chromedp.KeyEvent(userPW),
			chromedp.KeyEvent(kb.Tab), // the role stays member
			chromedp.KeyEvent(kb.Tab),
			chromedp.KeyEvent("ledger, invoices"),
			chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.CSS(".flash")),
		)
		if err != nil {
			t.Fatalf("add a member: %v", err)
		}
		flashed, err := chromedp.Run(admin, chromedp.Text(chromedp.CSS(".flash")))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(flashed, "Member added.") {
			t.Fatalf("after adding: %q", flashed)
		}
		if u, err := s.Orgs.User(dbtest.Operator(), "acme", "dave"); err != nil || u.Name != "Dave Doe" || strings.Join(u.Ownership, "|") != "ledger|invoices" {
			t.Fatalf("the member added: %+v, %v", u, err)
		}
		member := browser(t, chromium)
		signIn(t, member, s.URL, "acme", "dave")
		if who, err := chromedp.Run(member, chromedp.Text(chromedp.CSS(".who span"))); err != nil || who != "dave · acme" {
			t.Fatalf("the new member signed in as %q (%v)", who, err)
		}
		// Remove asks first, on a page of its own.
		err = chromedp.Do(admin,
			chromedp.Navigate(s.URL+"/admin/members/dave"),
			chromedp.WaitVisible(chromedp.CSS(`a[href="/admin/members/dave/remove"]`)),
			chromedp.Focus(chromedp.CSS(`a[href="/admin/members/dave/remove"]`)),
			chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.ID("remove-confirm")),
		)
		if err != nil {
			t.Fatalf("open the removal's confirmation: %v", err)
		}
		if u, err := s.Orgs.User(dbtest.Operator(), "acme", "dave"); err != nil || u == nil {
			t.Fatalf("dave was removed before the removal was confirmed: %+v, %v", u, err)
		}
		err = chromedp.Do(admin,
			chromedp.Focus(chromedp.ID("remove-confirm")),
			chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.CSS(".flash")),
		)
		if err == nil {
			flashed, err = chromedp.Run(admin, chromedp.Text(chromedp.CSS(".flash")))
		}
		if err != nil || !strings.Contains(flashed, "Member removed.") {
			t.Fatalf("remove the member: %q, %v", flashed, err)
		}
		if err := chromedp.Do(member, chromedp.Navigate(s.URL+"/inbox"), chromedp.WaitVisible(chromedp.ID("org_id"))); err != nil {
			t.Fatalf("the removed member's browser is not sent to the sign-in: %v", err)
		}
	})
}
