package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mail/mailtest"
)

// forgedLine is what a name of two lines would add to a mail as a line of
// its own.
const forgedLine = "Reset your password: https://evil.test/"

// TestNamesCannotForgeMailLines gives the org, its admin and a member
// names of two lines, as a server stored them before names had to be one
// line, and has ctalk send every mail that shows them: the invite (the
// admin and the org), the reset link (the member), the admin's reset (the
// admin, the member) and a question's notification (the asker). No line
// of any mail starts with what a name carried after its line break.
func TestNamesCannotForgeMailLines(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		box := mailtest.Start(t)
		s := start(t, engine, withMail(box))
		s.org(t, "acme")
		ctx := dbtest.Operator()
		for _, stmt := range []string{
			`UPDATE orgs SET name = 'Acme' || chr(13) || chr(10) || '` + forgedLine + `' WHERE id = 'acme'`,
			`UPDATE users SET name = 'Alice' || chr(10) || '` + forgedLine + `' WHERE org_id = 'acme' AND id = 'alice'`,
			`UPDATE users SET name = 'Bob' || chr(13) || '` + forgedLine + `' WHERE org_id = 'acme' AND id = 'bob'`,
		} {
			if engine == db.SQLite {
				stmt = strings.ReplaceAll(stmt, "chr(", "char(")
			}
			if _, err := dbtest.Exec(s.DB, stmt); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Orgs.SetEmail(ctx, "acme", "bob", "bob@example.com"); err != nil {
			t.Fatal(err)
		}
		alice := s.newClient(t, "acme", "alice")
		if code, body := alice.post("/admin/invites", url.Values{"email": {"dan@example.com"}, "user_id": {"dan"}, "name": {"Dan"}, "role": {"member"}}); code != http.StatusOK {
			t.Fatalf("invite: %d %s", code, body)
		}
		if code, _ := forgot(s.anonymous(t), "acme", "bob"); code != http.StatusOK {
			t.Fatalf("forgot: %d", code)
		}
		if code, _ := alice.post("/admin/members/bob/password", url.Values{"new_password": {"taken-over-1"}, "confirm": {"taken-over-1"}, "your_password": {userPW}}); code != http.StatusOK {
			t.Fatalf("admin reset: %d", code)
		}
		if _, err := s.Inbox.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "alice"}, inbox.Ask{To: "bob", Text: "Ready?"}); err != nil {
			t.Fatal(err)
		}
		s.Access.Wait()
		var mails []mailtest.Received
		testkit.WaitFor(t, 10*time.Second, "the four mails", func() (bool, error) {
			mails = box.Messages()
			return len(mails) >= 4, nil
		})
		subjects := map[string]bool{}
		for _, m := range mails {
			subject := m.Header.Get("Subject")
			subjects[subject] = true
			for _, part := range []string{m.Text, m.HTML} {
				for _, line := range strings.FieldsFunc(part, func(r rune) bool { return r == '\n' || r == '\r' }) {
					if strings.HasPrefix(strings.TrimSpace(line), forgedLine) {
						t.Errorf("the mail %q has a line of a name's: %q\n%s", subject, line, m.Text)
					}
				}
			}
		}
		for _, want := range []string{"invites you to", "Reset your ctalk password", "was reset by an admin", "asks you a question"} {
			found := false
			for subject := range subjects {
				found = found || strings.Contains(subject, want)
			}
			if !found {
				t.Errorf("no mail %q among %v", want, subjects)
			}
		}
	})
}
