package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
)

// waitAuditEvent waits until orgID's audit log holds an event of tool by userID
// with outcome, touching touched when given.
func (s *site) waitAuditEvent(t *testing.T, orgID, userID, tool, outcome, touched string) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("the audit event %s %s by %s", tool, outcome, userID), func() (bool, error) {
		var n int
		err := s.DB.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM audit_events WHERE org_id = $1 AND user_id = $2 AND tool = $3 AND outcome = $4 AND ids LIKE $5`,
			orgID, userID, tool, outcome, "%"+touched+"%").Scan(&n)
		return n > 0, err
	})
}

// TestAdminIsForAdmins: a member is refused every admin page and action,
// and nothing changes.
func TestAdminIsForAdmins(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		bob := s.newClient(t, "acme", "bob")
		for _, path := range []string{"/admin", "/admin/audit", "/admin/members/carol"} {
			if code, body := bob.get(path); code != http.StatusForbidden || !strings.Contains(body, "Only an admin") {
				t.Errorf("a member's GET %s: %d, want 403", path, code)
			}
		}
		for _, c := range []struct {
			path string
			form url.Values
		}{
			{"/admin/members", url.Values{"user_id": {"eve"}, "name": {"Eve"}, "password": {userPW}}},
			{"/admin/members/carol/remove", url.Values{}},
			{"/admin/members/bob/role", url.Values{"role": {"admin"}}},
			{"/admin/members/carol/password", url.Values{"new_password": {"another-pass"}, "confirm": {"another-pass"}}},
			{"/admin/settings", url.Values{"approval_mode": {"human"}}},
		} {
			if code, _ := bob.post(c.path, c.form); code != http.StatusForbidden {
				t.Errorf("a member's POST %s: %d, want 403", c.path, code)
			}
		}
		ctx := dbtest.Operator()
		users, _ := s.Orgs.Users(ctx, "acme")
		org, _ := s.Orgs.Org(ctx, "acme")
		if len(users) != 3 || users[1].Role != orgs.RoleMember || org.ApprovalMode != orgs.ApprovalAgent {
			t.Errorf("a member's refused actions changed something: %v, %s", users, org.ApprovalMode)
		}
		if _, body := s.newClient(t, "acme", "carol").get("/inbox"); strings.Contains(body, `href="/admin"`) {
			t.Error("a member's navigation links to the admin pages")
		}
	})
}

// TestAdminAddsMember: an admin adds a member, who then signs in; a taken
// id is refused next to the form, keeping what was typed but the password.
func TestAdminAddsMember(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		alice := s.newClient(t, "acme", "alice")
		code, body := alice.post("/admin/members", url.Values{"user_id": {"dave"}, "name": {"Dave"}, "password": {userPW},
			"role": {"member"}, "ownership": {"billing, invoices"}})
		if code != http.StatusOK || !strings.Contains(body, "Member added.") || !strings.Contains(body, `href="/admin/members/dave"`) {
			t.Fatalf("add dave: %d\n%s", code, body)
		}
		if _, body := s.newClient(t, "acme", "dave").get("/inbox"); !strings.Contains(body, "dave · acme") {
			t.Fatal("the new member cannot sign in")
		}
		code, body = alice.post("/admin/members", url.Values{"user_id": {"dave"}, "name": {"Second Dave"}, "password": {userPW}, "ownership": {"ops"}})
		if code != http.StatusConflict || !strings.Contains(body, `is taken`) || !strings.Contains(body, `value="Second Dave"`) || strings.Contains(body, userPW) {
			t.Fatalf("a taken id: %d\n%s", code, body)
		}
		if code, body := alice.post("/admin/members", url.Values{"user_id": {"erin"}, "name": {"Erin"}, "password": {"short"}}); code != http.StatusBadRequest || !strings.Contains(body, "password") {
			t.Errorf("a short password: %d", code)
		}
		s.waitAuditEvent(t, "acme", "alice", "web:register_user", "ok", "dave")
		s.waitAuditEvent(t, "acme", "alice", "web:register_user", "conflict", "")
		if strings.Contains(s.logs.String(), userPW) {
			t.Error("the server's log holds a password")
		}
	})
}

// TestAdminRemovesMember: removing a member asks first (a page of its own,
// which a post without its confirmation shows too), then ends their
// browser session (their next page is the sign-in) and every token, at
// once.
func TestAdminRemovesMember(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		alice := s.newClient(t, "acme", "alice")
		bob := s.newClient(t, "acme", "bob")
		agent := s.agent(t, "acme", "bob")
		personal, _ := newPersonalToken(t, bob, "ci")
		viaPersonal := testkit.Connect(t, s.URL, testkit.EraSessions, personal)
		toBob, err := s.Inbox.Ask(dbtest.Operator(), acme("carol"), inbox.Ask{To: "bob", Text: "Is the deploy frozen?"})
		if err != nil {
			t.Fatal(err)
		}
		// The member's page only links to the confirmation; the page, and a
		// post without its confirmation, ask and change nothing.
		if _, body := alice.get("/admin/members/bob"); !strings.Contains(body, `href="/admin/members/bob/remove"`) ||
			strings.Contains(body, `action="/admin/members/bob/remove"`) {
			t.Errorf("the member's page removes at once, or has no way to:\n%s", body)
		}
		code, page := alice.get("/admin/members/bob/remove")
		codeRaw, pageRaw := alice.post("/admin/members/bob/remove", url.Values{})
		for _, asked := range []struct {
			code int
			body string
		}{{code, page}, {codeRaw, pageRaw}} {
			if asked.code != http.StatusOK || !strings.Contains(asked.body, "This cannot be undone.") ||
				!strings.Contains(asked.body, `name="confirmed" value="yes"`) || strings.Contains(asked.body, "Member removed.") {
				t.Fatalf("asking to remove bob: %d\n%s", asked.code, asked.body)
			}
		}
		if u, err := s.Orgs.User(dbtest.Operator(), "acme", "bob"); err != nil || u == nil || !agentWorks(agent) {
			t.Fatalf("bob was removed before it was confirmed: %+v, %v", u, err)
		}
		code, body := alice.post("/admin/members/bob/remove", url.Values{"confirmed": {"yes"}})
		if code != http.StatusOK || !strings.Contains(body, "Member removed.") || strings.Contains(body, `href="/admin/members/bob"`) {
			t.Fatalf("remove bob: %d\n%s", code, body)
		}
		if _, body := bob.get("/inbox"); !strings.Contains(body, `id="org_id"`) {
			t.Error("the removed member's browser still sees the app")
		}
		if agentWorks(agent) || agentWorks(viaPersonal) {
			t.Error("the removed member's agents still work")
		}
		if code, _ := alice.get("/admin/members/bob"); code != http.StatusNotFound {
			t.Errorf("the removed member's page: %d, want 404", code)
		}
		// Carol's question to bob is declined to her at once.
		replies, _, err := s.Inbox.Replies(dbtest.Operator(), acme("carol"), time.Time{}, "", 10)
		if err != nil || len(replies) != 1 || replies[0].ID != toBob.ID || replies[0].Status != inbox.StatusDeclined || replies[0].Reason != inbox.DepartedReason {
			t.Errorf("carol's replies after bob's removal: %+v, %v", replies, err)
		}
		s.waitAuditEvent(t, "acme", "alice", "web:remove_user", "ok", "bob")
	})
}

// TestLastAdmin: the last admin can be neither demoted nor removed, also
// when the last two admins demote each other at the same moment.
func TestLastAdmin(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		alice := s.newClient(t, "acme", "alice")
		code, body := alice.post("/admin/members/alice/role", url.Values{"role": {"member"}})
		if code != http.StatusConflict || !strings.Contains(body, "last admin") {
			t.Fatalf("demote the last admin: %d\n%s", code, body)
		}
		if code, body := alice.post("/admin/members/alice/remove", url.Values{"confirmed": {"yes"}}); code != http.StatusConflict || !strings.Contains(body, "last admin") {
			t.Fatalf("remove the last admin: %d\n%s", code, body)
		}
		bob := s.newClient(t, "acme", "bob")
		for round := range 8 {
			if code, body := alice.post("/admin/members/bob/role", url.Values{"role": {"admin"}}); code != http.StatusOK || !strings.Contains(body, "Role changed.") {
				t.Fatalf("round %d: make bob an admin: %d", round, code)
			}
			var wg sync.WaitGroup
			changed := make([]bool, 2)
			for i, c := range []struct {
				by     *client
				target string
			}{{alice, "bob"}, {bob, "alice"}} {
				wg.Go(func() {
					code, body := c.by.post("/admin/members/"+c.target+"/role", url.Values{"role": {"member"}})
					changed[i] = code == http.StatusOK && strings.Contains(body, "Role changed.")
				})
			}
			wg.Wait()
			users, _ := s.Orgs.Users(dbtest.Operator(), "acme")
			admins := 0
			for _, u := range users {
				if u.Role == orgs.RoleAdmin {
					admins++
				}
			}
			if admins != 1 || changed[0] == changed[1] {
				t.Fatalf("round %d: demotions done %v, %d admins left; want exactly one of each", round, changed, admins)
			}
			if changed[1] {
				// bob won: he is the admin now; swap back for the next round.
				if code, _ := bob.post("/admin/members/alice/role", url.Values{"role": {"admin"}}); code != http.StatusOK {
					t.Fatal("make alice an admin again")
				}
				if code, _ := alice.post("/admin/members/bob/role", url.Values{"role": {"member"}}); code != http.StatusOK {
					t.Fatal("make bob a member again")
				}
			}
		}
		s.waitAuditEvent(t, "acme", "alice", "web:set_user_role", "conflict", "alice")
		// An admin who makes themselves a member lands on their inbox, and
		// the admin pages are closed to them from then on.
		if code, _ := alice.post("/admin/members/bob/role", url.Values{"role": {"admin"}}); code != http.StatusOK {
			t.Fatal("make bob an admin")
		}
		code, body = alice.post("/admin/members/alice/role", url.Values{"role": {"member"}})
		if code != http.StatusOK || !strings.Contains(body, `aria-current="page">Inbox`) || strings.Contains(body, `href="/admin"`) {
			t.Fatalf("an admin demoting themselves: %d\n%s", code, body)
		}
		if code, _ := alice.get("/admin"); code != http.StatusForbidden {
			t.Errorf("the demoted admin's /admin: %d, want 403", code)
		}
	})
}

// TestAdminMemberActions: reset a password (their sessions end, the new
// password signs in), sign a member out everywhere, change the settings and
// the admin password; each is written to the audit log.
func TestAdminMemberActions(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		alice := s.newClient(t, "acme", "alice")
		bob := s.newClient(t, "acme", "bob")
		if code, body := alice.post("/admin/members/bob/password", url.Values{"new_password": {"new-password-1"}, "confirm": {"other"}}); code != http.StatusBadRequest || !strings.Contains(body, "differ") {
			t.Fatalf("mismatched passwords: %d", code)
		}
		code, body := alice.post("/admin/members/bob/password", url.Values{"new_password": {"new-password-1"}, "confirm": {"new-password-1"}, "your_password": {userPW}})
		if code != http.StatusOK || !strings.Contains(body, "Password reset.") {
			t.Fatalf("reset bob's password: %d\n%s", code, body)
		}
		if _, body := bob.get("/inbox"); !strings.Contains(body, `id="org_id"`) {
			t.Error("bob's browser still signed in after the reset")
		}
		if _, _, err := s.Auth.SignIn(dbtest.Operator(), "acme", "bob", "new-password-1", ""); err != nil {
			t.Errorf("sign in with the new password: %v", err)
		}
		carol := s.newClient(t, "acme", "carol")
		carolAgent := s.agent(t, "acme", "carol")
		if code, body := alice.post("/admin/members/carol/revoke", url.Values{}); code != http.StatusOK || !strings.Contains(body, "stopped working") {
			t.Fatalf("sign carol out: %d", code)
		}
		if _, body := carol.get("/inbox"); !strings.Contains(body, `id="org_id"`) || agentWorks(carolAgent) {
			t.Error("carol is still signed in somewhere")
		}
		if code, body := alice.post("/admin/settings", url.Values{"approval_mode": {"human"}}); code != http.StatusOK || !strings.Contains(body, "Settings saved.") || !strings.Contains(body, `value="human" checked`) {
			t.Fatalf("approval mode human: %d", code)
		}
		if code, _ := alice.post("/admin/settings", url.Values{"approval_mode": {"robot"}}); code != http.StatusBadRequest {
			t.Errorf("approval mode robot: %d, want 400", code)
		}
		if org, _ := s.Orgs.Org(dbtest.Operator(), "acme"); org.ApprovalMode != orgs.ApprovalHuman {
			t.Errorf("approval mode %q, want human", org.ApprovalMode)
		}
		if code, _ := alice.post("/admin/password", url.Values{"new_admin_password": {"a new admin password"}, "confirm": {"a new admin password"}}); code != http.StatusOK {
			t.Fatalf("change the admin password: %d", code)
		}
		if err := s.Auth.VerifyAdminPassword(auth.WithClientAddr(dbtest.Operator(), "127.0.0.1"), "acme", "a new admin password"); err != nil {
			t.Errorf("the new admin password: %v", err)
		}
		for _, tool := range []string{"web:reset_user_password", "web:revoke_user_tokens"} {
			s.waitAuditEvent(t, "acme", "alice", tool, "ok", "")
		}
		s.waitAuditEvent(t, "acme", "alice", "web:update_org_settings", "ok", "")
		s.waitAuditEvent(t, "acme", "alice", "web:update_org_settings", "invalid", "")
		s.waitAuditEvent(t, "acme", "alice", "web:change_admin_password", "ok", "")
		if strings.Contains(s.logs.String(), "new-password-1") || strings.Contains(s.logs.String(), "a new admin password") {
			t.Error("the server's log holds a password")
		}
	})
}

// TestAdminCrossOrg: a member of another org is not found, whatever the
// action, and is not touched.
func TestAdminCrossOrg(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		s.org(t, "globex")
		ctx := dbtest.Operator()
		if _, err := s.Orgs.AddUser(ctx, "globex", orgs.NewUser{ID: "dave", Name: "Dave", Password: userPW}); err != nil {
			t.Fatal(err)
		}
		daveAgent := s.agent(t, "globex", "dave")
		dave := s.newClient(t, "globex", "dave")
		alice := s.newClient(t, "acme", "alice")
		if code, _ := alice.get("/admin/members/dave"); code != http.StatusNotFound {
			t.Errorf("another org's member's page: %d, want 404", code)
		}
		for _, c := range []struct {
			path string
			form url.Values
		}{
			{"/admin/members/dave/remove", url.Values{}},
			{"/admin/members/dave/role", url.Values{"role": {"admin"}}},
			{"/admin/members/dave/password", url.Values{"new_password": {"another-pass"}, "confirm": {"another-pass"}, "your_password": {userPW}}},
			{"/admin/members/dave/revoke", url.Values{}},
		} {
			if code, body := alice.post(c.path, c.form); code != http.StatusNotFound || !strings.Contains(body, `dave&#34; not found`) {
				t.Errorf("POST %s for another org's member: %d, want 404", c.path, code)
			}
		}
		if u, err := s.Orgs.User(ctx, "globex", "dave"); err != nil || u.Role != orgs.RoleMember {
			t.Errorf("dave of globex was changed: %+v, %v", u, err)
		}
		if !agentWorks(daveAgent) {
			t.Error("dave's agent was revoked")
		}
		if _, body := dave.get("/inbox"); !strings.Contains(body, "dave · globex") {
			t.Error("dave was signed out")
		}
		if _, body := alice.get("/admin"); strings.Contains(body, "dave") {
			t.Error("another org's member is listed")
		}
	})
}

// TestAdminAndTokenFormsNeedCSRF: the forms of the admin and tokens pages
// posted without their CSRF token are refused and change nothing.
func TestAdminAndTokenFormsNeedCSRF(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		alice := s.newClient(t, "acme", "alice")
		for _, c := range []struct {
			path string
			form url.Values
		}{
			{"/admin/members", url.Values{"user_id": {"eve"}, "name": {"Eve"}, "password": {userPW}}},
			{"/admin/members/bob/remove", url.Values{}},
			{"/admin/settings", url.Values{"approval_mode": {"human"}}},
			{"/tokens", url.Values{"label": {"x"}, "days": {"30"}}},
		} {
			if code, _ := alice.postRaw(c.path, c.form); code != http.StatusForbidden {
				t.Errorf("POST %s without its CSRF token: %d, want 403", c.path, code)
			}
		}
		ctx := dbtest.Operator()
		users, _ := s.Orgs.Users(ctx, "acme")
		org, _ := s.Orgs.Org(ctx, "acme")
		var personal int
		s.DB.QueryRow(ctx, `SELECT COUNT(*) FROM tokens WHERE kind = 'personal'`).Scan(&personal)
		if len(users) != 3 || org.ApprovalMode != orgs.ApprovalAgent || personal != 0 {
			t.Errorf("forms without CSRF changed something: %d users, mode %s, %d personal tokens", len(users), org.ApprovalMode, personal)
		}
	})
}
