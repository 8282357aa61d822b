package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/orgs"
)

// TestSSOInABrowser drives single sign-on in Chromium (on SQLite, see inChromium)
// (the pages' policy lets forms post only to the site, so the way on to
// the provider must be a link): alice, an admin with a passkey, runs the
// test sign-in from /admin/sso and requires single sign-on; her password
// session is then held at the break-glass passkey step, which once passed
// is audited and mailed to the other admin; she adds the org's email
// domain, is shown its TXT record and verifies it (axe checks the page
// with the domain pending); bob then signs in by his work email's domain
// on the sign-in page.
func TestSSOInABrowser(t *testing.T) {
	t.Parallel()
	inChromium(t, func(t *testing.T, chromium context.Context, engine db.Engine) {
		bg := dbtest.Operator()
		op := testkit.NewOpenIDProvider(t, "ctalk-acme", ssoSecret)
		box := mailtest.Start(t)
		s := startSSO(t, engine, func(w *app.Wiring) {
			w.Mail = box.Config()
			w.API.PublicURL = apitest.SelfLocalhost
		})
		s.org(t, "acme")
		base := localhost(s)
		if _, err := s.Orgs.SetRole(bg, "acme", "carol", orgs.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{"bob", "carol"} {
			if _, err := s.Orgs.SetEmail(bg, "acme", u, u+"@acme.test"); err != nil {
				t.Fatal(err)
			}
		}
		ctx := browser(t, chromium)
		authenticator(t, ctx, false)
		signIn(t, ctx, base, "acme", "alice")
		run(t, ctx, chromedp.Navigate(base+"/profile"), chromedp.WaitVisible(chromedp.ID("passkey-name")),
			chromedp.SendKeys(chromedp.ID("passkey-name"), "Laptop"))
		press(t, ctx, `[data-passkey="register"] button`)
		appears(t, ctx, ".passkey-item")

		configureSSO(t, s.newClientAt(t, base, "acme", "alice"), op, map[string][]string{"link_by_email": {"on"}})
		// The domain, added and proven on the page; axe checks it pending.
		run(t, ctx, chromedp.Navigate(base+"/admin/sso"), chromedp.WaitVisible(chromedp.ID("sso-domain")),
			chromedp.SendKeys(chromedp.ID("sso-domain"), "acme.test"))
		press(t, ctx, `form[action="/admin/sso/domains"] button`)
		appears(t, ctx, ".domain-item dl")
		record, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".domain-item dd code")].map(c => c.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		if len(record) != 3 || record[0] != "_ctalk.acme.test" || record[1] != "TXT" || !strings.HasPrefix(record[2], "ctalk-verification=") {
			t.Fatalf("the record shown: %q", record)
		}
		checkPage(t, ctx, base, "/admin/sso")
		s.dns.SetTXT(record[0], record[2])
		press(t, ctx, `form[action$="/verify"] button`)
		appears(t, ctx, ".flash")
		if text := shown(t, ctx, ".domain-item"); !strings.Contains(text, "Verified") {
			t.Fatalf("after Verify the domain reads %q", text)
		}
		op.SetUser(testkit.OIDCUser{Subject: "idp-alice", Email: "alice@acme.test", EmailVerified: true})
		run(t, ctx, chromedp.Navigate(base+"/admin/sso"), chromedp.WaitVisible(chromedp.CSS(`form[action="/admin/sso/test"] button`)))
		press(t, ctx, `form[action="/admin/sso/test"] button`)
		appears(t, ctx, "#sso-continue")
		press(t, ctx, "#sso-continue")
		appears(t, ctx, ".flash")
		if flash := shown(t, ctx, ".flash"); !strings.Contains(flash, "Test sign-in succeeded") {
			t.Fatalf("after the test sign-in the page says %q", flash)
		}
		press(t, ctx, `form[action="/admin/sso/required"] button`)
		// Her own password session is now the break-glass one.
		appears(t, ctx, `[data-passkey="verify"] button`)
		press(t, ctx, `[data-passkey="verify"] button`)
		appears(t, ctx, "#sso-settings")
		if text := shown(t, ctx, "main"); !strings.Contains(text, "Single sign-on is required") {
			t.Fatalf("after the break-glass passkey the page says %q", text)
		}
		testkit.WaitFor(t, 10*time.Second, "the break-glass sign-in in the audit log", func() (bool, error) {
			evs, _, err := s.Audit.Events(bg, "acme", audit.Filter{Limit: 50})
			for _, e := range evs {
				if e.Tool == "web:sso_break_glass" && e.UserID == "alice" {
					return true, err
				}
			}
			return false, err
		})
		m := box.WaitFor(t, 1)[0]
		if m.To[0] != "carol@acme.test" || !strings.Contains(m.Text, "break-glass") {
			t.Errorf("the mail to the other admin: to %v, %q", m.To, m.Text)
		}

		// bob, by his email's domain, from the sign-in page.
		op.SetUser(testkit.OIDCUser{Subject: "idp-bob", Email: "bob@acme.test", EmailVerified: true})
		bob := browser(t, chromium)
		run(t, bob, chromedp.Navigate(base+"/signin"), chromedp.WaitVisible(chromedp.ID("sso-org")),
			chromedp.SendKeys(chromedp.ID("sso-org"), "bob@acme.test"))
		press(t, bob, `form[action="/sso/start"] button`)
		appears(t, bob, "#sso-continue")
		press(t, bob, "#sso-continue")
		appears(t, bob, "header.top")
		if who := shown(t, bob, "form.who span"); who != "bob · acme" {
			t.Fatalf("signed in through SSO as %q", who)
		}
	})
}
