package web_test

import (
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/outbound"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/notify"
)

// TestNotificationSettingsPage: a person saves their channels per kind,
// quiet hours and pause with the form; a bad zone is refused next to the
// form; a webhook's secret is shown once and never again; a member cannot
// touch the org's settings or webhooks, an admin can; a form without its
// CSRF token changes nothing.
func TestNotificationSettingsPage(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		ctx := dbtest.Operator()
		bob := s.newClient(t, "acme", "bob")
		code, page := bob.get("/profile/notifications")
		if code != http.StatusOK {
			t.Fatalf("GET: %d", code)
		}
		mustShow(t, "page", page, "A question waits for you", "PUBLIC_URL", "Delivery log",
			"What comes during a pause is dropped, not sent when you turn it off", "what comes during them is held and sent when they end")
		mustNotShow(t, "member's page", page, "Your organization")

		form := url.Values{"kind.question": {"webhook"}, "kind.mention": {"email", "webhook"}, "paused": {"on"},
			"quiet_start": {"22:00"}, "quiet_end": {"07:00"}, "time_zone": {"Europe/Berlin"}}
		if code, body := bob.postRaw("/profile/notifications", form); code != http.StatusForbidden {
			t.Fatalf("without CSRF: %d %s", code, body)
		}
		if code, _ := bob.post("/profile/notifications", form); code != http.StatusOK {
			t.Fatalf("save: %d", code)
		}
		set, err := s.Notify.Settings(ctx, acme("bob"))
		if err != nil {
			t.Fatal(err)
		}
		if q := set.Channels[notify.KindQuestion]; len(q) != 1 || q[0] != "webhook" || !set.Paused || set.QuietStart != "22:00" || set.TimeZone != "Europe/Berlin" ||
			len(set.Channels[notify.KindDraft]) != 0 || len(set.Channels[notify.KindMention]) != 2 {
			t.Fatalf("saved %+v", set)
		}
		form.Set("time_zone", "Mars/Olympus")
		if code, body := bob.post("/profile/notifications", form); code != http.StatusBadRequest || !strings.Contains(body, "IANA") {
			t.Fatalf("a bad zone: %d", code)
		}

		code, page = bob.post("/profile/notifications/webhooks", url.Values{"url": {"https://hooks.slack.com/services/T/B/x"}, "format": {"slack"}})
		secret := secretIn(page)
		if code != http.StatusOK || secret == "" {
			t.Fatalf("add webhook: %d, secret %q\n%s", code, secret, page)
		}
		_, page = bob.get("/profile/notifications")
		mustShow(t, "page with the webhook", page, "hooks.slack.com")
		mustNotShow(t, "page after", html.UnescapeString(page), secret)
		if code, _ := bob.post("/profile/notifications/webhooks", url.Values{"url": {"http://example.com/hook"}}); code != http.StatusBadRequest {
			t.Fatalf("an http webhook: %d", code)
		}

		if code, _ := bob.post("/profile/notifications/org", url.Values{"text_mode": {"full"}, "reminder_minutes": {"5"}}); code != http.StatusForbidden {
			t.Fatalf("a member set the org's settings: %d", code)
		}
		if code, _ := bob.post("/profile/notifications/webhooks", url.Values{"url": {"https://example.com/hook"}, "scope": {"org"}}); code != http.StatusForbidden {
			t.Fatalf("a member added an org webhook: %d", code)
		}
		alice := s.newClient(t, "acme", "alice")
		if code, _ := alice.post("/profile/notifications/org", url.Values{"text_mode": {"full"}, "reminder_minutes": {"5"}}); code != http.StatusOK {
			t.Fatalf("an admin: %d", code)
		}
		if o, _ := s.Notify.OrgSettings(ctx, "acme"); o.TextMode != "full" || o.ReminderMinutes != 5 {
			t.Fatalf("org settings %+v", o)
		}
		hooks, _ := s.Notify.Webhooks(ctx, "acme", "bob")
		if len(hooks) != 1 {
			t.Fatalf("bob has %d webhooks", len(hooks))
		}
		if code, _ := alice.post("/profile/notifications/webhooks/delete", url.Values{"id": {hooks[0].ID}}); code != http.StatusNotFound {
			t.Fatalf("alice deleted bob's webhook: %d", code)
		}
		if code, _ := bob.post("/profile/notifications/webhooks/delete", url.Values{"id": {hooks[0].ID}}); code != http.StatusOK {
			t.Fatalf("delete: %d", code)
		}

		// A delivery that fails (loopback, which a server never reaches)
		// shows in bob's log and, for alice the admin, among the org's
		// failures; carol sees neither.
		if _, err := s.Notify.SaveSettings(ctx, acme("bob"), notify.Settings{}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Notify.AddWebhook(ctx, "acme", "bob", "bob", "https://127.0.0.1:9/hook", "json"); err != nil {
			t.Fatal(err)
		}
		err = s.DB.Tx(ctx, func(tx db.Querier) error {
			return s.Notify.Queue(ctx, tx, notify.Event{Kind: notify.KindQuestion, OrgID: "acme", UserID: "bob", Actor: "carol", Subject: "q_1", Text: "zebracorn", Link: "/inbox"})
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Notify.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		_, page = bob.get("/profile/notifications")
		mustShow(t, "bob's log", page, "failed", outbound.Unreachable, "disabled")
		_, page = alice.get("/profile/notifications")
		mustShow(t, "alice's failures", page, "question to bob", "failed")
		carol := s.newClient(t, "acme", "carol")
		_, page = carol.get("/profile/notifications")
		mustNotShow(t, "carol's page", page, "to bob", "127.0.0.1", "zebracorn")
	})
}

// secretIn returns the webhook signing secret page shows, or "": the page
// writes a secret's + as &#43;.
func secretIn(page string) string {
	return regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`).FindString(html.UnescapeString(page))
}

// TestWebhookTestRedeliverAndRotate: from the settings page a person sends
// a test event to their webhook, sends a failed delivery again once the
// receiver works, and gives the webhook a new signing secret, shown once;
// another member can do none of it to their webhook.
func TestWebhookTestRedeliverAndRotate(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		var mu sync.Mutex
		status, kinds := http.StatusOK, []string{}
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body struct{ Type string }
			json.NewDecoder(r.Body).Decode(&body)
			mu.Lock()
			defer mu.Unlock()
			kinds = append(kinds, body.Type)
			w.WriteHeader(status)
		}))
		t.Cleanup(receiver.Close)
		s := start(t, engine, withMail(mailtest.Start(t)), func(w *app.Wiring) {
			w.Notify = notify.DefaultConfig()
			w.Notify.AllowHTTP = true
		})
		s.org(t, "acme")
		ctx := dbtest.Operator()
		bob, carol := s.newClient(t, "acme", "bob"), s.newClient(t, "acme", "carol")
		code, page := bob.post("/profile/notifications/webhooks", url.Values{"url": {receiver.URL + "/hook"}, "format": {"json"}})
		// The server's own worker sends too: a delivery's status is
		// waited for, whichever sends it.
		waitStatus := func(status string) []*notify.Delivery {
			t.Helper()
			var log []*notify.Delivery
			testkit.WaitFor(t, 10*time.Second, "bob's one delivery "+status, func() (bool, error) {
				var err error
				log, err = s.Notify.DeliveryLog(ctx, acme("bob"), 10)
				return len(log) == 1 && log[0].Status == status, err
			})
			return log
		}
		secret := secretIn(page)
		if code != http.StatusOK || secret == "" {
			t.Fatalf("add webhook: %d", code)
		}
		hooks, _ := s.Notify.Webhooks(ctx, "acme", "bob")
		id := url.Values{"id": {hooks[0].ID}}
		mustShow(t, "bob's page", page, "Send a test event", "New signing secret")

		if code, page := bob.post("/profile/notifications/webhooks/test", id); code != http.StatusOK || !strings.Contains(page, "The test event reached the webhook") {
			t.Fatalf("test event: %d", code)
		}
		if code, _ := carol.post("/profile/notifications/webhooks/test", id); code != http.StatusNotFound {
			t.Errorf("carol tested bob's webhook: %d", code)
		}

		mu.Lock()
		status = http.StatusBadRequest
		mu.Unlock()
		if code, page := bob.post("/profile/notifications/webhooks/test", id); code != http.StatusServiceUnavailable || !strings.Contains(page, "HTTP 400") {
			t.Fatalf("a test event the webhook refuses: %d", code)
		}
		err := s.DB.Tx(ctx, func(tx db.Querier) error {
			return s.Notify.Queue(ctx, tx, notify.Event{Kind: notify.KindQuestion, OrgID: "acme", UserID: "bob", Actor: "carol", Subject: "q_1", Text: "Ready?", Link: "/inbox"})
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Notify.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		log := waitStatus("failed")
		_, page = bob.get("/profile/notifications")
		mustShow(t, "bob's log", page, "Redeliver")
		delivery := url.Values{"id": {log[0].ID}}
		if code, _ := carol.post("/profile/notifications/deliveries/redeliver", delivery); code != http.StatusNotFound {
			t.Errorf("carol redelivered bob's delivery: %d", code)
		}
		mu.Lock()
		status = http.StatusOK
		mu.Unlock()
		if code, page := bob.post("/profile/notifications/deliveries/redeliver", delivery); code != http.StatusOK || !strings.Contains(page, "on its way again") {
			t.Fatalf("redeliver: %d", code)
		}
		if err := s.Notify.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		waitStatus("sent")
		mu.Lock()
		if want := []string{"test", "test", "question", "question"}; strings.Join(kinds, " ") != strings.Join(want, " ") {
			t.Errorf("the receiver got %v, want %v", kinds, want)
		}
		mu.Unlock()

		if code, _ := carol.post("/profile/notifications/webhooks/rotate", id); code != http.StatusNotFound {
			t.Errorf("carol rotated bob's secret: %d", code)
		}
		code, page = bob.post("/profile/notifications/webhooks/rotate", id)
		rotated := secretIn(page)
		if code != http.StatusOK || rotated == "" || rotated == secret || !strings.Contains(page, "new signing secret") {
			t.Fatalf("rotate: %d, secret %q", code, rotated)
		}
		_, page = bob.get("/profile/notifications")
		mustNotShow(t, "page after rotating", html.UnescapeString(page), rotated)
	})
}
