package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/mail/mailtest"
)

// TestAdminResetNeedsOwnPassword: an admin's browser session alone resets
// no member's password: the form needs the admin's own password, typed
// again and checked; a wrong or missing one changes nothing, an admin's own
// password is not reset through the admin path, and each refusal and the
// reset are in the audit log with the factor the admin used.
func TestAdminResetNeedsOwnPassword(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		alice := s.newClient(t, "acme", "alice")
		form := func(own string) url.Values {
			v := url.Values{"new_password": {"taken-over-1"}, "confirm": {"taken-over-1"}}
			if own != "" {
				v.Set("your_password", own)
			}
			return v
		}
		ctx := dbtest.Operator()
		for _, own := range []string{"", "not alice's password"} {
			code, body := alice.post("/admin/members/bob/password", form(own))
			if code != http.StatusUnauthorized || !strings.Contains(body, "your own password is not right") {
				t.Errorf("own password %q: %d, want 401 saying so", own, code)
			}
			if _, _, err := s.Auth.SignIn(ctx, "acme", "bob", "taken-over-1", ""); err == nil {
				t.Fatalf("own password %q: bob's password was reset", own)
			}
		}
		if code, body := alice.post("/admin/members/alice/password", form(userPW)); code != http.StatusForbidden || !strings.Contains(body, "/profile") {
			t.Errorf("an admin's own password through the admin path: %d, want 403 naming the profile page", code)
		}
		if _, body := alice.get("/admin/members/alice"); strings.Contains(body, `name="new_password"`) {
			t.Error("an admin's own member page offers the reset form")
		}
		if _, body := alice.get("/admin/members/bob"); !strings.Contains(body, `name="your_password"`) {
			t.Error("the reset form does not ask for the admin's own password")
		}
		if code, _ := alice.post("/admin/members/bob/password", form(userPW)); code != http.StatusOK {
			t.Fatalf("reset with the right own password: %d", code)
		}
		if _, _, err := s.Auth.SignIn(ctx, "acme", "bob", "taken-over-1", ""); err != nil {
			t.Errorf("bob signs in with the reset password: %v", err)
		}
		s.waitAuditEvent(t, "acme", "alice", "web:reset_user_password", "unauthorized", "bob")
		s.waitAuditEvent(t, "acme", "alice", "web:reset_user_password", "forbidden", "alice")
		s.waitAuditEvent(t, "acme", "alice", "web:reset_user_password", "ok", "bob")
		var n int
		if err := s.DB.QueryRow(ctx, `SELECT COUNT(*) FROM audit_events WHERE org_id = 'acme' AND tool = 'web:reset_user_password' AND factor <> $1`, audit.FactorPasswordSession).Scan(&n); err != nil || n != 0 {
			t.Errorf("%d reset events name another factor than %s (%v)", n, audit.FactorPasswordSession, err)
		}
		if strings.Contains(s.logs.String(), "taken-over-1") {
			t.Error("the server's log holds a password")
		}
	})
}

// TestAdminSetsAgentPasswordLogin: the person allows and disables agents'
// password logins on the admin page, the one place that may allow them.
func TestAdminSetsAgentPasswordLogin(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		alice := s.newClient(t, "acme", "alice")
		ctx := dbtest.Operator()
		for _, v := range []string{"disabled", "allowed"} {
			code, body := alice.post("/admin/settings", url.Values{"agent_password_login": {v}})
			if code != http.StatusOK || !strings.Contains(body, `name="agent_password_login" value="`+v+`" checked`) {
				t.Fatalf("agent_password_login %s: %d", v, code)
			}
			if org, err := s.Orgs.Org(ctx, "acme"); err != nil || org.AgentPasswordLogin != v {
				t.Fatalf("after %s the org reads %+v, %v", v, org, err)
			}
		}
		if code, _ := alice.post("/admin/settings", url.Values{"agent_password_login": {"sometimes"}}); code != http.StatusBadRequest {
			t.Errorf("agent_password_login sometimes: %d, want 400", code)
		}
	})
}

// TestAdminResetTellsTheMember: a member whose password an admin reset is
// told by mail, which names the admin and carries no secret and no link
// that does anything but open the sign-in page.
func TestAdminResetTellsTheMember(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		box := mailtest.Start(t)
		s := start(t, engine, withMail(box))
		s.org(t, "acme")
		if _, err := s.Orgs.SetEmail(dbtest.Operator(), "acme", "bob", "bob@example.com"); err != nil {
			t.Fatal(err)
		}
		alice := s.newClient(t, "acme", "alice")
		if code, _ := alice.post("/admin/members/bob/password", url.Values{"new_password": {"taken-over-1"}, "confirm": {"taken-over-1"}, "your_password": {userPW}}); code != http.StatusOK {
			t.Fatalf("reset: %d", code)
		}
		got := box.WaitFor(t, 1)[0]
		if got.To[0] != "bob@example.com" || !strings.Contains(got.Header.Get("Subject"), "was reset by an admin") || !strings.Contains(got.Text, "Alice") {
			t.Fatalf("mail to %v, %q:\n%s", got.To, got.Header.Get("Subject"), got.Text)
		}
		for _, secret := range []string{"taken-over-1", userPW, "ctalk_", "/reset/"} {
			if strings.Contains(string(got.Data), secret) {
				t.Errorf("the mail carries %q", secret)
			}
		}
	})
}
