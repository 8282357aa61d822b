package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// chromium is the test kit's headless browser.
var chromium = testkit.Browser

// callbackServer stands for a native client's loopback listener: it
// receives the browser at the end of the sign-in.
func callbackServer(t *testing.T) (string, <-chan url.Values) {
	t.Helper()
	got := make(chan url.Values, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			// The browser's own requests, such as /favicon.ico.
			http.NotFound(w, r)
			return
		}
		got <- r.URL.Query()
		w.Write([]byte("signed in; you may close this window"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/callback", got
}

func waitCallback(t *testing.T, got <-chan url.Values) url.Values {
	t.Helper()
	select {
	case q := <-got:
		return q
	case <-time.After(30 * time.Second):
		t.Fatal("the browser never reached the client's redirect URI")
		return nil
	}
}

// TestSignInInBrowser drives the sign-in and consent pages in a real
// headless Chromium, by keyboard only: the page names the client and where
// it returns, the person signs in with Enter, and the browser lands on the
// client's loopback redirect with a code (so the Content-Security-Policy
// lets the form's redirect through); a second client asks consent, given
// with the keyboard too.
func TestSignInInBrowser(t *testing.T) {
	t.Parallel()
	// One browser for both engines, with a browser context of its own (its
	// own cookies) for each: starting Chromium is the slow part.
	browserCtx := chromium(t)
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
			defer cancel()
			e := start(t, engine)
			registerPerson(t, e, "acme", "alice")
			redirect, got := callbackServer(t)
			clientID := newClient(t, e.URL, "Browser Test Agent", redirect)
			_, ch := pkce("browser")

			err := chromedp.Do(ctx,
				chromedp.Navigate(authorizeURL(e.URL, clientID, redirect, ch, nil)),
				chromedp.WaitVisible(chromedp.ID("org_id")),
			)
			if err != nil {
				t.Fatalf("open the sign-in page: %v", err)
			}
			lead, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("p.lead")))
			if err != nil {
				t.Fatal(err)
			}
			err = chromedp.Do(ctx,
				chromedp.SendKeys(chromedp.ID("org_id"), "acme"),
				chromedp.KeyEvent(kb.Tab),
				chromedp.KeyEvent("alice"),
				chromedp.KeyEvent(kb.Tab),
				chromedp.KeyEvent(userPW),
				chromedp.KeyEvent(kb.Enter),
			)
			if err != nil {
				t.Fatalf("sign in: %v", err)
			}
			u, _ := url.Parse(redirect)
			if !strings.Contains(lead, "Browser Test Agent") || !strings.Contains(lead, u.Host) {
				t.Errorf("the page says %q; want the client's name and %s", lead, u.Host)
			}
			if q := waitCallback(t, got); q.Get("code") == "" || q.Get("state") != "st-1" || q.Get("iss") != e.URL {
				t.Fatalf("callback query %v", q)
			}
			// The callback server hears the request before the browser has
			// its page: a navigation started now would abort that one.
			loaded(t, ctx, redirect)

			other := newClient(t, e.URL, "Second Agent", redirect)
			err = chromedp.Do(ctx,
				chromedp.Navigate(authorizeURL(e.URL, other, redirect, ch, nil)),
				chromedp.WaitVisible(chromedp.CSS("button[value=allow]")),
			)
			if err != nil {
				t.Fatalf("open the consent page: %v", err)
			}
			allow, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("button[value=allow]")))
			if err != nil {
				t.Fatal(err)
			}
			if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS("button[value=allow]")), chromedp.KeyEvent(kb.Enter)); err != nil {
				t.Fatalf("consent: %v", err)
			}
			if !strings.Contains(allow, "Second Agent") {
				t.Errorf("the consent button says %q", allow)
			}
			if q := waitCallback(t, got); q.Get("code") == "" {
				t.Fatalf("callback after consent: %v", q)
			}
		})
	}
}

// loaded waits until the browser has finished loading a page whose address
// starts with prefix.
func loaded(t *testing.T, ctx context.Context, prefix string) {
	t.Helper()
	testkit.WaitFor(t, 15*time.Second, "the browser to load "+prefix, func() (bool, error) {
		at, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.readyState + " " + location.href`))
		return err == nil && strings.HasPrefix(at, "complete "+prefix), nil
	})
}
