package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/outbound"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestSlackPages: an admin connects the org's Slack app on /admin/slack,
// which shows the manifest and never the secrets again; a member links
// their Slack account through the link the app sends them, which only
// they can open, once; and unlinks. Members cannot reach the admin page.
func TestSlackPages(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		sl := testkit.NewSlack(t)
		s := start(t, engine, func(w *app.Wiring) {
			w.API.PublicURL = "self"
			w.Slack.APIURL = sl.URL + "/api/"
			w.Slack.HTTP = outbound.Client(outbound.Options{AllowLoopback: true})
		})
		s.org(t, "acme")
		alice, bob, carol := s.newClient(t, "acme", "alice"), s.newClient(t, "acme", "bob"), s.newClient(t, "acme", "carol")
		if _, body := alice.get("/admin/slack"); !strings.Contains(body, "/slack/interactions") || !strings.Contains(body, "message.im") || !strings.Contains(body, "chat:write") {
			t.Fatalf("the manifest: %s", body)
		}
		if code, body := alice.post("/admin/slack", url.Values{"bot_token": {"nope"}, "signing_secret": {"0123456789abcdef0123"}}); code != http.StatusBadRequest || !strings.Contains(body, "xoxb-") {
			t.Errorf("a token of the wrong shape: %d", code)
		}
		const token, secret = "xoxb-TACME-secret-token", "signing-secret-0123456789abcdef"
		code, body := alice.post("/admin/slack", url.Values{"bot_token": {token}, "signing_secret": {secret}})
		if code != http.StatusOK || !strings.Contains(body, "TACME") {
			t.Fatalf("connecting: %d %s", code, body)
		}
		if code, _ := bob.get("/admin/slack"); code != http.StatusForbidden {
			t.Errorf("a member's GET /admin/slack: %d, want 403", code)
		}
		if code, body := bob.post("/profile/slack/link", url.Values{"slack_user_id": {"U0BOB"}}); code != http.StatusOK || !strings.Contains(body, "on its way") {
			t.Fatalf("asking for the link: %d %s", code, body)
		}
		dm := sl.Await(t, "chat.postMessage", 1, nil)[0]
		_, raw, _ := strings.Cut(dm.Form.Get("text"), "/profile/slack/confirm/")
		raw, _, _ = strings.Cut(raw, "\n")
		path := "/profile/slack/confirm/" + raw
		if code, _ := carol.get(path); code != http.StatusNotFound {
			t.Errorf("another member opening bob's link: %d, want 404", code)
		}
		if code, _ := carol.post(path, url.Values{}); code != http.StatusNotFound {
			t.Errorf("another member confirming bob's link: %d, want 404", code)
		}
		if code, body := bob.get(path); code != http.StatusOK || !strings.Contains(body, "Link my Slack account") {
			t.Fatalf("bob opening his link: %d %s", code, body)
		}
		if code, body := bob.post(path, url.Values{}); code != http.StatusOK || !strings.Contains(body, "U0BOB") {
			t.Fatalf("bob confirming: %d %s", code, body)
		}
		if code, _ := bob.post(path, url.Values{}); code != http.StatusNotFound {
			t.Errorf("the link used twice: %d, want 404", code)
		}
		if code, body := bob.post("/profile/slack/unlink", url.Values{}); code != http.StatusOK || !strings.Contains(body, "Unlinked") {
			t.Errorf("unlinking: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
		for _, where := range []string{s.logs.String(), body} {
			if strings.Contains(where, secret) || strings.Contains(where, token) {
				t.Error("a Slack secret was shown or logged")
			}
		}
		if _, page := alice.get("/admin/slack"); strings.Contains(page, secret) || strings.Contains(page, token) {
			t.Error("the admin page shows a secret")
		}
	})
}
