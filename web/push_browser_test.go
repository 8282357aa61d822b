package web_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestPushInABrowser: on the notification settings page in Chromium, the
// page's script registers the push service worker for the whole site,
// which the browser accepts from the server's headers, and offers to turn
// push on; with notifications allowed, turning it on asks the browser's
// push service for a subscription. Chromium's push service (Firebase
// Cloud Messaging) is out of reach offline: when the browser says so, the
// page shows why, and the test skips that last step by name (the server's
// side of it is TestPushAtTheHTTPBoundary's and
// TestWebPushArrivesEncryptedAndSigned's).
func TestPushInABrowser(t *testing.T) {
	t.Parallel()
	inChromium(t, func(t *testing.T, chromium context.Context, engine db.Engine) {
		s := start(t, engine, withPublicURL)
		s.org(t, "acme")
		base := localhost(s)
		ctx := browser(t, chromium)
		signIn(t, ctx, base, "acme", "bob")
		run(t, ctx, chromedp.Navigate(base+"/profile/notifications"))
		appears(t, ctx, "#push-on")
		if got := shown(t, ctx, "#push-status"); got != "Push notifications are off in this browser." {
			t.Fatalf("push status %q", got)
		}
		scope, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.serviceWorker.getRegistration("/").then(r => r && r.active ? r.scope + " " + r.active.scriptURL : "none")`, chromedp.EvalAwaitPromise))
		if err != nil || scope != base+"/ "+base+"/static/push-worker.js" {
			t.Fatalf("the service worker registration is %q (%v)", scope, err)
		}
		origin := (&url.URL{Scheme: "http", Host: strings.TrimPrefix(base, "http://")}).String()
		for _, perm := range []*cdpbrowser.PermissionDescriptor{{Name: "notifications"}, {Name: "push", UserVisibleOnly: true}} {
			_, err = chromedp.Call(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{Permission: perm,
				Setting: cdpbrowser.PermissionSettingGranted, Origin: origin, BrowserContextID: chromedp.FromContext(ctx).BrowserContextID})
			if err != nil {
				t.Fatalf("allow %s: %v", perm.Name, err)
			}
		}
		press(t, ctx, "#push-on")
		var status string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			status = shown(t, ctx, "#push-status")
			if strings.HasPrefix(status, "Push could not be turned on") || strings.Contains(shown(t, ctx, "main"), "Push notifications are on in this browser") {
				break
			}
		}
		if strings.HasPrefix(status, "Push could not be turned on") {
			t.Skipf("the page registered its service worker; subscribing needs Chromium's push service, out of reach here: %s", status)
		}
		list, err := s.Notify.PushBrowsers(dbtest.Operator(), ctalk.Caller{OrgID: "acme", UserID: "bob"})
		if err != nil || len(list) != 1 {
			t.Fatalf("after turning push on, bob's browsers are %v (%v); the page says %q", list, err, status)
		}
	})
}
