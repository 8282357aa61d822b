package web_test

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

func withPublicURL(w *app.Wiring) { w.API.PublicURL = apitest.SelfURL }

// pushForm is a browser's push subscription as static/push.js posts it.
func pushForm(t *testing.T, endpoint string) url.Values {
	t.Helper()
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	return url.Values{"endpoint": {endpoint}, "p256dh": {base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes())},
		"auth": {base64.RawURLEncoding.EncodeToString(auth)}}
}

// TestPushAtTheHTTPBoundary: the service worker is served from the app's
// origin as a worker script allowed the whole site, under the pages' CSP;
// the page carries the server's VAPID public key (never the private one)
// and says what push needs without JavaScript; a subscription posted as
// the script posts it is stored, listed and removable with a form, a bad
// one refused next to the section, one without the CSRF token refused,
// another person's not removable; working hours are saved with the form.
func TestPushAtTheHTTPBoundary(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine, withPublicURL)
		s.org(t, "acme")
		ctx := dbtest.Operator()
		bob, carol := s.newClient(t, "acme", "bob"), s.newClient(t, "acme", "carol")

		resp, err := http.Get(s.URL + "/static/push-worker.js")
		if err != nil {
			t.Fatal(err)
		}
		code, body := read(t, resp)
		if h := resp.Header; code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/javascript") ||
			h.Get("Service-Worker-Allowed") != "/" || !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") ||
			!strings.Contains(body, "showNotification") {
			t.Fatalf("service worker: %d %v", code, h)
		}

		code, page := bob.get("/profile/notifications")
		key := regexp.MustCompile(`data-vapid-key="([A-Za-z0-9_-]+)"`).FindStringSubmatch(page)
		if code != http.StatusOK || key == nil || key[1] != s.Notify.VAPIDPublicKey() {
			t.Fatalf("the page carries no VAPID key (%d)", code)
		}
		mustShow(t, "page", page, "needs JavaScript", "Push is on in none of your browsers", `value="push"`, "Working days")
		var priv string
		if err := s.DB.QueryRow(ctx, `SELECT secret FROM notify_keys WHERE name = 'vapid'`).Scan(&priv); err != nil {
			t.Fatal(err)
		}
		priv, _, _ = strings.Cut(priv, ".")
		mustNotShow(t, "page", page, priv)

		form := pushForm(t, "https://push.example.net/send/bob-1")
		if code, _ := bob.postRaw("/profile/notifications/push", form); code != http.StatusForbidden {
			t.Fatalf("without CSRF: %d", code)
		}
		bad := pushForm(t, "https://push.example.net/send/bob-1")
		bad.Set("auth", "AAAA")
		if code, page := bob.post("/profile/notifications/push", bad); code != http.StatusBadRequest || !strings.Contains(page, `id="push-error"`) || !strings.Contains(page, "16 bytes") {
			t.Fatalf("a bad subscription: %d", code)
		}
		if code, page := bob.post("/profile/notifications/push", form); code != http.StatusOK || !strings.Contains(page, "Push notifications are on in this browser") {
			t.Fatalf("subscribe: %d", code)
		}
		list, err := s.Notify.PushBrowsers(ctx, ctalk.Caller{OrgID: "acme", UserID: "bob"})
		if err != nil || len(list) != 1 || list[0].Service != "push.example.net" {
			t.Fatalf("bob's browsers: %v %v", list, err)
		}
		_, page = bob.get("/profile/notifications")
		mustShow(t, "page with a browser", page, "push.example.net", list[0].ID)
		if code, _ := carol.post("/profile/notifications/push/delete", url.Values{"id": {list[0].ID}}); code != http.StatusNotFound {
			t.Fatalf("carol removing bob's browser: %d", code)
		}
		if code, _ := bob.post("/profile/notifications/push/delete", url.Values{"id": {list[0].ID}}); code != http.StatusOK {
			t.Fatalf("bob removing his browser: %d", code)
		}
		if list, _ := s.Notify.PushBrowsers(ctx, ctalk.Caller{OrgID: "acme", UserID: "bob"}); len(list) != 0 {
			t.Fatalf("still subscribed: %v", list)
		}

		hours := url.Values{"working_hours": {"shown"}, "kind.question": {"push"}, "time_zone": {"Europe/Berlin"}, "work_day": {"1", "2", "3", "4"}, "work_start": {"10:00"}, "work_end": {"14:00"}}
		if code, _ := bob.post("/profile/notifications", hours); code != http.StatusOK {
			t.Fatalf("save working hours: %d", code)
		}
		set, _ := s.Notify.Settings(ctx, ctalk.Caller{OrgID: "acme", UserID: "bob"})
		if len(set.WorkDays) != 4 || set.WorkStart != "10:00" || set.WorkEnd != "14:00" || set.Channels["question"][0] != "push" {
			t.Fatalf("saved %+v", set)
		}
		hours.Del("work_day")
		if code, page := bob.post("/profile/notifications", hours); code != http.StatusBadRequest || !strings.Contains(page, "at least one working day") {
			t.Fatalf("no working day: %d", code)
		}
	})
}
