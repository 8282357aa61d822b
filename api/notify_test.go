package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mail/mailtest"
)

// TestAskMailsTheRecipient runs a whole server with PUBLIC_URL and SMTP:
// ask_person queues the question's notification with the ask, the worker
// mails it to the recipient with a link to the question and no secret, and
// get_notification_settings shows the recipient's agent the settings,
// which it cannot change.
func TestAskMailsTheRecipient(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	each(t, func(t *testing.T, e *env, era string) {
		users := e.Org(t, era, "acme")
		if _, err := e.Orgs.SetEmail(dbtest.Operator(), "acme", "bob", "bob@acme.test"); err != nil {
			t.Fatal(err)
		}
		asked := ok(t, users["alice"], "ask_person", map[string]any{"to_user_id": "bob", "question": "Where is the runbook?\nsecond line"})
		id, _ := asked["message_id"].(string)
		// The servers of the other engine and era mail the same receiver
		// meanwhile: this question's mail is the one that links to it.
		var got mailtest.Received
		testkit.WaitFor(t, 10*time.Second, "the question's mail", func() (bool, error) {
			for _, m := range smtp.Messages() {
				if strings.Contains(m.Text, "/inbox/"+id) {
					got = m
					return true, nil
				}
			}
			return false, nil
		})
		if got.To[0] != "bob@acme.test" || got.Header.Get("Subject") != "Alice asks you a question" {
			t.Fatalf("mail to %v: %q", got.To, got.Header.Get("Subject"))
		}
		if !strings.Contains(got.Text, "https://ctalk.test/inbox/"+id) || strings.Contains(got.Text, "second line") {
			t.Fatalf("mail text:\n%s", got.Text)
		}
		for _, secret := range []string{"ctalk_", adminPW, userPW, "whsec_"} {
			if strings.Contains(string(got.Data), secret) {
				t.Fatalf("the mail carries %q", secret)
			}
		}
		res := ok(t, users["bob"], "get_notification_settings", nil)
		if res["notifications_enabled"] != true || res["email_enabled"] != true {
			t.Fatalf("get_notification_settings = %v", res)
		}
		channels := res["settings"].(map[string]any)["channels"].(map[string]any)
		if q, _ := channels["question"].([]any); len(q) != 3 {
			t.Fatalf("question channels = %v", channels["question"])
		}
		// /metrics counts the mail once the worker has recorded it.
		for deadline := time.Now().Add(10 * time.Second); ; {
			req, _ := http.NewRequest("GET", e.URL+"/metrics", nil)
			req.Header.Set("Authorization", "Bearer "+testMetricsToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), `ctalk_notifications_sent_total{channel="email"} 1`) && strings.Contains(string(b), "ctalk_notifications_queue_age_seconds") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("/metrics does not count the mail:\n%s", b)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// The tool takes nothing that changes a setting.
		fail(t, users["bob"], "get_notification_settings", map[string]any{"settings": map[string]any{"paused": true}}, "")
	}, options{Wiring: func(w *app.Wiring) {
		w.API.PublicURL = "https://ctalk.test"
		w.Mail = smtp.Config()
	}})
}
