package web_test

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/scim"
)

// TestOrganizationDeletion: an admin schedules the org's deletion with
// its id typed again and their password; members are told by mail, and
// their tokens and sign-ins stop at once while the admin may still sign
// in and cancel, which gives the tokens back. Once due, every row of the
// org is gone from every table the catalog lists, another org's stay,
// the operator's record is kept, and the id is never given again.
func TestOrganizationDeletion(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		box := mailtest.Start(t)
		s := start(t, engine, withMail(box))
		ctx := dbtest.Operator()
		s.org(t, "acme")
		s.org(t, "globex")
		alice := s.fill(t, "acme")
		s.fill(t, "globex")
		if _, err := s.Orgs.SetEmail(ctx, "acme", "bob", "bob@example.com"); err != nil {
			t.Fatal(err)
		}
		// A group the identity provider pushed: a row of scim_groups that
		// refers to its channel, which the deletion must take first.
		for _, org := range []string{"acme", "globex"} {
			if _, err := s.SCIM.CreateGroup(ctx, org, scim.GroupAttrs{DisplayName: "Designers", Members: []string{"carol"}}); err != nil {
				t.Fatal(err)
			}
		}
		before := dbtest.OrgRows(t, s.DB, "acme")
		if before["scim_groups"] != 1 {
			t.Fatalf("the org holds %d SCIM groups, want 1", before["scim_groups"])
		}
		if len(before) < 12 {
			t.Fatalf("the org holds rows in only %d tables, too few to prove the deletion: %v", len(before), before)
		}
		token, _, err := s.Auth.Login(ctx, "acme", "bob", userPW, "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		bobWeb := s.newClient(t, "acme", "bob")

		if code, _ := bobWeb.post("/admin/delete", url.Values{"confirm_org_id": {"acme"}, "your_password": {userPW}}); code != http.StatusForbidden {
			t.Errorf("a member's deletion: %d", code)
		}
		if code, body := alice.post("/admin/delete", url.Values{"confirm_org_id": {"acme-typo"}, "your_password": {userPW}}); code != http.StatusBadRequest || !strings.Contains(body, "type the organization&#39;s id") {
			t.Errorf("a wrong id typed: %d", code)
		}
		if code, _ := alice.post("/admin/delete", url.Values{"confirm_org_id": {"acme"}, "your_password": {"not her password"}}); code != http.StatusUnauthorized {
			t.Errorf("a wrong password: %d", code)
		}
		if d, _ := s.Orgs.ScheduledDeletion(ctx, "acme"); d != nil {
			t.Fatal("a refused form scheduled the deletion")
		}
		// Where the org asks for passkeys, the password is not enough: a
		// fresh passkey verification is asked for on the spot.
		if _, err := dbtest.Exec(s.DB, `UPDATE orgs SET approval_factor = 'passkey' WHERE id = 'globex'`); err != nil {
			t.Fatal(err)
		}
		globexAdmin := s.newClient(t, "globex", "alice")
		if code, body := globexAdmin.post("/admin/delete", url.Values{"confirm_org_id": {"globex"}, "your_password": {userPW}}); code != http.StatusUnauthorized || !strings.Contains(body, "passkey verification") {
			t.Errorf("a deletion without a passkey where the org asks for one: %d", code)
		}
		if d, _ := s.Orgs.ScheduledDeletion(ctx, "globex"); d != nil {
			t.Fatal("a deletion was scheduled without the passkey")
		}
		if code, body := alice.post("/admin/delete", url.Values{"confirm_org_id": {"acme"}, "your_password": {userPW}}); code != http.StatusOK || !strings.Contains(body, "is to be deleted on") {
			t.Fatalf("schedule the deletion: %d\n%s", code, body)
		}
		mails := box.WaitFor(t, 1)
		if mails[0].To[0] != "bob@example.com" || !strings.Contains(mails[0].Header.Get("Subject"), "is to be deleted") {
			t.Errorf("the mail: %v %q", mails[0].To, mails[0].Header.Get("Subject"))
		}
		if _, err := s.Auth.Authenticate(ctx, token); ctalk.ErrorCode(err) != ctalk.EUnauthorized {
			t.Errorf("bob's token while the deletion is scheduled: %v", err)
		}
		if _, _, err := s.Auth.Login(ctx, "acme", "alice", userPW, "127.0.0.1"); ctalk.ErrorCode(err) != ctalk.EForbidden || !strings.Contains(err.Error(), "to be deleted") {
			t.Errorf("an agent's login: %v", err)
		}
		if _, page := bobWeb.get("/inbox"); !strings.Contains(page, `action="/signin"`) {
			t.Error("bob's browser session still works")
		}
		if code, body := s.anonymous(t).post("/signin", url.Values{"org_id": {"acme"}, "user_id": {"bob"}, "password": {userPW}}); code != http.StatusForbidden || !strings.Contains(body, "to be deleted") {
			t.Errorf("bob's sign-in: %d", code)
		}
		if code, page := alice.get("/admin"); code != http.StatusOK || !strings.Contains(page, "Cancel the deletion") {
			t.Errorf("the admin's page while the deletion waits: %d", code)
		}
		if code, _ := alice.post("/admin/delete/cancel", url.Values{}); code != http.StatusOK {
			t.Fatalf("cancel: %d", code)
		}
		if _, err := s.Auth.Authenticate(ctx, token); err != nil {
			t.Errorf("bob's token after the cancellation: %v", err)
		}

		if code, _ := alice.post("/admin/delete", url.Values{"confirm_org_id": {"acme"}, "your_password": {userPW}}); code != http.StatusOK {
			t.Fatalf("schedule again: %d", code)
		}
		var n int
		// The audit log is written in the background; its events of the
		// org are rows of the org too.
		testkit.WaitFor(t, 10*time.Second, "the deletion's audit events", func() (bool, error) {
			err := s.DB.QueryRow(ctx, `SELECT COUNT(*) FROM audit_events WHERE org_id = 'acme' AND tool = 'web:schedule_org_deletion' AND outcome = 'ok'`).Scan(&n)
			return n == 2, err
		})
		if got, err := s.Orgs.DeleteDue(ctx, time.Now().Add(orgs.DeletionGrace-time.Hour), slog.Default()); err != nil || len(got) != 0 {
			t.Fatalf("a deletion before it is due: %v, %v", got, err)
		}
		got, err := s.Orgs.DeleteDue(ctx, time.Now().Add(orgs.DeletionGrace+time.Minute), slog.Default())
		if err != nil || len(got) != 1 || got[0] != "acme" {
			t.Fatalf("the deletion due: %v, %v", got, err)
		}
		if left := dbtest.OrgRows(t, s.DB, "acme"); len(left) != 0 {
			t.Errorf("rows of the deleted org are left: %v", left)
		}
		// The other org, filled alike, keeps its rows in every table (its
		// audit events may still be on their way).
		kept := dbtest.OrgRows(t, s.DB, "globex")
		for table := range before {
			if kept[table] == 0 && !strings.HasPrefix(table, "audit_") {
				t.Errorf("the other org lost its rows of %s: %v", table, kept)
			}
		}
		if err := s.DB.QueryRow(ctx, `SELECT row_count FROM retired_orgs WHERE id = 'acme'`).Scan(&n); err != nil || n == 0 {
			t.Errorf("the operator's record: %d, %v", n, err)
		}
		if _, err := s.Orgs.Register(ctx, orgs.NewOrg{ID: "acme", Name: "Acme again", AdminPassword: adminPW}); ctalk.ErrorCode(err) != ctalk.EConflict {
			t.Errorf("registering the deleted org's id again: %v", err)
		}
	})
}
