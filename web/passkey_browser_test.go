package web_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
)

// localhost is the site's URL under the name "localhost": a passkey's
// relying-party id is a domain, never an address, and browsers allow
// passkeys over http on localhost only.
func localhost(s *site) string { return strings.Replace(s.URL, "127.0.0.1", "localhost", 1) }

// authenticator gives the tab ctx a virtual platform authenticator (CTAP2,
// internal transport, resident keys, user verification that succeeds), as
// Chromium's DevTools protocol offers for tests, and returns its id.
//
// cmtg gives it the cmtgKey extension: Chromium refuses to add a
// credential to an authenticator without it, since the protocol's
// credential always names the extension's field.
func authenticator(t *testing.T, ctx context.Context, cmtg bool) webauthn.AuthenticatorID {
	t.Helper()
	var id webauthn.AuthenticatorID
	run(t, ctx, chromedp.Navigate("about:blank"), chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{}); err != nil {
			return err
		}
		res, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
			Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21, Transport: webauthn.AuthenticatorTransportInternal,
			HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true, HasCmtgKey: cmtg,
		}})
		id = res.AuthenticatorID
		return err
	}))
	return id
}

// TestPasskeysInABrowser drives passkeys in Chromium with a virtual
// authenticator (on SQLite, see inChromium): bob adds a passkey on his profile, signs
// out and signs in with it without typing an id (a discoverable
// credential), while strangers' guesses hold his password back; in an org whose approval_factor is passkey, his approval
// once his verification is older than five minutes stops at the step-up
// page, changes nothing there, and goes through after he verifies, recorded
// as approved by passkey; a copy of his passkey whose counter went back is
// refused and recorded; the OAuth sign-in page signs him in with it too;
// and removing the passkey asks for a fresh
// verification first.
func TestPasskeysInABrowser(t *testing.T) {
	t.Parallel()
	inChromium(t, func(t *testing.T, chromium context.Context, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		base, bg := localhost(s), dbtest.Operator()
		ctx := browser(t, chromium)
		auth := authenticator(t, ctx, false)

		// Registration.
		signIn(t, ctx, base, "acme", "bob")
		run(t, ctx, chromedp.Navigate(base+"/profile"), chromedp.WaitVisible(chromedp.ID("passkey-name")),
			chromedp.SendKeys(chromedp.ID("passkey-name"), "Work laptop"),
		)
		press(t, ctx, `[data-passkey="register"] button`)
		appears(t, ctx, ".passkey-item")
		if got := shown(t, ctx, ".passkey-item"); !strings.Contains(got, "Work laptop") || !strings.Contains(got, "added") {
			t.Fatalf("the profile lists %q", got)
		}
		keys, err := s.Auth.Passkeys(bg, "acme", "bob")
		if err != nil || len(keys) != 1 || keys[0].Name != "Work laptop" {
			t.Fatalf("stored passkeys = %+v, %v", keys, err)
		}

		// Strangers lock bob's password (100 failures from ten addresses)...
		for i := range 100 {
			s.Auth.CheckPassword(bg, "acme", "bob", "wrong-password", fmt.Sprintf("203.0.113.%d", i/10+1))
		}
		if _, err := s.Auth.CheckPassword(bg, "acme", "bob", userPW, "198.51.100.1"); ctalk.ErrorCode(err) != ctalk.ERateLimited {
			t.Fatalf("bob's password after 100 failures: %v, want it held back", err)
		}
		// ...which never blocks his passkey: he signs in without ids, from
		// the browser's autofill (conditional mediation), which the virtual
		// authenticator answers as soon as the page asks.
		press(t, ctx, "form.who button")
		appears(t, ctx, "main.card")
		run(t, ctx, chromedp.Navigate(base+"/signin"))
		appears(t, ctx, "header.top")
		if who := shown(t, ctx, "form.who span"); who != "bob · acme" {
			t.Fatalf("signed in with the passkey as %q", who)
		}

		// Step-up before an approval, in passkey mode.
		if _, err := s.Orgs.SetSettings(bg, "acme", orgs.Settings{ApprovalMode: orgs.ApprovalHuman, ApprovalFactor: orgs.FactorPasskey}); err != nil {
			t.Fatal(err)
		}
		id := s.ask(t, "alice", "bob", "Is the freeze on Monday?")
		s.propose(t, id, "Yes, from 9:00 UTC.")
		age(t, s, "bob", 6*time.Minute)
		run(t, ctx, chromedp.Navigate(base+"/inbox/"+id), chromedp.WaitVisible(chromedp.ID("approve-"+id)))
		// The page verifies as the approval is sent, with no detour (a
		// form without JavaScript goes to the step-up page: see
		// TestPasskeyFactorHoldsWithAPassword).
		if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("form[data-passkey-verify]").length`)); n != 5 {
			t.Fatalf("%d decision forms verify with a passkey first, want the five", n)
		}
		press(t, ctx, "#approve-"+id)
		appears(t, ctx, ".flash")
		if path, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`)); path != "/inbox/"+id {
			t.Errorf("after the approval the page is %s, want the question's", path)
		}
		if flash := shown(t, ctx, ".flash"); !strings.Contains(flash, "Approved") {
			t.Fatalf("after verifying, the page says %q", flash)
		}
		testkit.WaitFor(t, 10*time.Second, "the approval's audit event with its factor", func() (bool, error) {
			evs, _, err := s.Audit.Events(bg, "acme", audit.Filter{Limit: 50})
			for _, e := range evs {
				if e.Tool == "web:approve_draft" && e.Outcome == "ok" {
					return e.Factor == "passkey", err
				}
			}
			return false, err
		})

		// A copy of the passkey whose counter went back, in a tab of its own.
		var stolen *webauthn.Credential
		run(t, ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			res, err := chromedp.Call(ctx, webauthn.GetCredentials, webauthn.GetCredentialsParams{AuthenticatorID: auth})
			if err == nil && len(res.Credentials) == 1 {
				stolen = res.Credentials[0]
			}
			return err
		}))
		if stolen == nil || stolen.SignCount < 2 {
			t.Fatalf("the authenticator holds %+v, want one passkey used at least twice", stolen)
		}
		// This tab has no autofill, so that the page's button signs in.
		thief := browser(t, chromium)
		copyAuth := authenticator(t, thief, true)
		run(t, thief, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
				Source: `PublicKeyCredential.isConditionalMediationAvailable = () => Promise.resolve(false);`})
			return err
		}))
		clone := webauthn.Credential{CredentialID: stolen.CredentialID, IsResidentCredential: true, RpID: stolen.RpID, PrivateKey: stolen.PrivateKey,
			UserHandle: stolen.UserHandle, SignCount: 0, UserName: stolen.UserName, UserDisplayName: stolen.UserDisplayName}
		run(t, thief, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, webauthn.AddCredential, webauthn.AddCredentialParams{AuthenticatorID: copyAuth, Credential: &clone})
			return err
		}), chromedp.Navigate(base+"/signin"), chromedp.WaitVisible(chromedp.CSS(`[data-passkey="signin"] button`)),
		)
		press(t, thief, `[data-passkey="signin"] button`)
		appears(t, thief, `[data-passkey="signin"] [data-passkey-error]:not([hidden])`)
		if msg := shown(t, thief, `[data-passkey="signin"] [data-passkey-error]`); !strings.Contains(msg, "counter went back") {
			t.Fatalf("the copied passkey's sign-in says %q", msg)
		}
		var seen int
		if err := s.DB.QueryRow(bg, `SELECT COUNT(*) FROM passkeys WHERE org_id = 'acme' AND user_id = 'bob' AND clone_seen_at IS NOT NULL`).Scan(&seen); err != nil || seen != 1 {
			t.Fatalf("the copy was not recorded on the passkey: %d (%v)", seen, err)
		}
		testkit.WaitFor(t, 10*time.Second, "the copy's refusal in the audit log", func() (bool, error) {
			evs, _, err := s.Audit.Events(bg, "acme", audit.Filter{Limit: 50})
			for _, e := range evs {
				if e.Tool == "web:passkey_cloned" && e.UserID == "bob" && e.Outcome == "forbidden" {
					return true, err
				}
			}
			return false, err
		})

		// The OAuth sign-in page signs in with the passkey too, then asks
		// for consent.
		press(t, ctx, "form.who button")
		appears(t, ctx, "main.card")
		authorize := strings.Replace(authorization(t, s, "Claude Code"), url.QueryEscape(s.URL), url.QueryEscape(base), 1)
		run(t, ctx, chromedp.Navigate(base+authorize))
		appears(t, ctx, `button[value="allow"]`)
		if lead := shown(t, ctx, "p.lead"); !strings.Contains(lead, "signed in as bob of acme") {
			t.Fatalf("after the OAuth page's passkey sign-in, the page says %q", lead)
		}

		// Removal needs a fresh verification.
		age(t, s, "bob", 6*time.Minute)
		run(t, ctx, chromedp.Navigate(base+"/profile"), chromedp.WaitVisible(chromedp.CSS(".passkey-item button")))
		press(t, ctx, ".passkey-item button")
		appears(t, ctx, `[data-passkey="verify"][data-replay] button`)
		if keys, _ := s.Auth.Passkeys(bg, "acme", "bob"); len(keys) != 1 {
			t.Fatalf("the passkey was removed before a fresh verification")
		}
		press(t, ctx, `[data-passkey="verify"][data-replay] button`)
		appears(t, ctx, ".flash")
		if flash := shown(t, ctx, ".flash"); !strings.Contains(flash, "Passkey removed") {
			t.Fatalf("after removing, the page says %q", flash)
		}
		if keys, _ := s.Auth.Passkeys(bg, "acme", "bob"); len(keys) != 0 {
			t.Fatalf("passkeys after removal = %+v", keys)
		}
	})
}

// age makes every passkey verification of userID's browser sessions d old.
func age(t *testing.T, s *site, userID string, d time.Duration) {
	t.Helper()
	err := s.DB.Write(dbtest.Operator(), func(q db.Querier) error {
		_, err := q.Exec(dbtest.Operator(), `UPDATE web_sessions SET passkey_at = $1 WHERE org_id = 'acme' AND user_id = $2 AND passkey_at IS NOT NULL`,
			time.Now().UTC().Add(-d), userID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// appears waits until sel matches a visible element of the page in ctx,
// across the navigations the page's script makes (which a chromedp wait
// begun on the page before would not follow), and fails the test with the
// page's text after 20 seconds.
func appears(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const e = document.querySelector(`+"`"+sel+"`"+`); return !!e && e.offsetParent !== null; })()`))
		if err == nil && ok {
			return
		}
		last, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + (document.body ? document.body.innerText : "")`))
	}
	t.Fatalf("%s did not appear; the page is %s", sel, last)
}

// press clicks the element sel matches from the page's own script, for a
// button whose handler goes on to another page.
func press(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { document.querySelector(`+"`"+sel+"`"+`).click(); return true; })()`)); err != nil {
		t.Fatalf("press %s: %v", sel, err)
	}
}

// shown is the text of the element sel matches, read by the page's own
// script, which follows the navigations the page made.
func shown(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const e = document.querySelector(`+"`"+sel+"`"+`); return e ? e.innerText : ""; })()`))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

// TestSignInAtAnAddressOffersNoPasskey opens the sign-in page in Chromium
// with an authenticator ready (on SQLite, see inChromium): at localhost the page offers
// a passkey and its autofill asks the server for a ceremony; at the bare IP
// address, where no relying-party id is possible, the page offers none and
// calls nothing, with nothing in the console.
func TestSignInAtAnAddressOffersNoPasskey(t *testing.T) {
	t.Parallel()
	inChromium(t, func(t *testing.T, chromium context.Context, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		for _, c := range []struct {
			base  string
			offer bool
		}{{localhost(s), true}, {s.URL, false}} {
			ctx := browser(t, chromium)
			authenticator(t, ctx, false)
			var mu sync.Mutex
			var calls, errs []string
			if err := chromedp.Listen(ctx, func(ev any) {
				mu.Lock()
				defer mu.Unlock()
				switch ev := ev.(type) {
				case *network.EventRequestWillBeSent:
					if strings.Contains(ev.Request.URL, "/passkeys/") {
						calls = append(calls, ev.Request.URL)
					}
				case *runtime.EventConsoleAPICalled:
					if ev.Type == "error" {
						errs = append(errs, "console error")
					}
				case *runtime.EventExceptionThrown:
					errs = append(errs, ev.ExceptionDetails.Text)
				case *cdplog.EventEntryAdded:
					if ev.Entry.Level == cdplog.EntryLevelError {
						errs = append(errs, ev.Entry.Text)
					}
				}
			}); err != nil {
				t.Fatal(err)
			}
			run(t, ctx, chromedp.Navigate(c.base+"/signin"), chromedp.WaitVisible(chromedp.ID("org_id")), chromedp.Sleep(time.Second))
			offered, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.querySelector("[data-passkey]:not([hidden])")`))
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			if offered != c.offer || (len(calls) > 0) != c.offer || len(errs) > 0 {
				t.Errorf("%s/signin: passkey offered %v, calls %v, errors %v; want offered and called %v, no error", c.base, offered, calls, errs, c.offer)
			}
			mu.Unlock()
		}
	})
}
