package notify_test

import (
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/notify"
)

// TestSecurityNoticeReachesEveryWebhookAndBrowser: a security notice goes
// to the person's webhooks and browsers whatever their settings, a pause
// and no channel chosen for anything included, and not by email, which
// the account's own mails cover.
func TestSecurityNoticeReachesEveryWebhookAndBrowser(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		srv := mailtest.Start(t)
		s := newService(t, d, srv)
		ctx := dbtest.Operator()
		r := everyChannel(t, s, "b")
		none := notify.Settings{Paused: true, Channels: map[notify.Kind][]string{}}
		for _, k := range notify.Kinds {
			none.Channels[k] = []string{}
		}
		if _, err := s.SaveSettings(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, none); err != nil {
			t.Fatal(err)
		}
		if err := s.TellSecurity(ctx, "acme", "b", `A passkey "Phone" was added on your account.`); err != nil {
			t.Fatal(err)
		}
		drain(t, s)
		hooked, pushed, mailed := r.kinds(t, srv, "b@example.com")
		if strings.Join(hooked, " ") != "security" || strings.Join(pushed, " ") != "security" || len(mailed) != 0 {
			t.Fatalf("webhook %v, push %v, mail %v; want the notice by webhook and push alone", hooked, pushed, mailed)
		}
		body := r.hook.only(t)
		if !strings.Contains(body["text"].(string), `"Phone" was added`) || !strings.Contains(body["action"].(string), "If it was not you") {
			t.Errorf("the notice: %v", body)
		}
	})
}
