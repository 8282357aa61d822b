package web_test

import (
	"database/sql"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
)

// TestMemberErasure: an admin removes a member and erases their account
// and profile: their name becomes "a former member", their notes, email
// and every row of theirs in a table with a user_id column (read from the
// catalog) go, while the questions they asked and the messages they
// posted stay, shown under "a former member". The last admin cannot be
// erased.
func TestMemberErasure(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		ctx := dbtest.Operator()
		s.org(t, "acme")
		alice := s.fill(t, "acme")
		bob := s.agent(t, "acme", "bob")
		testkit.OK(t, bob, "update_my_notes", map[string]any{"notes": "I run the billing pipeline"})
		testkit.OK(t, bob, "post_message", map[string]any{"channel": "dev", "text": "Bob's deploy note"})
		if _, err := s.Orgs.SetEmail(ctx, "acme", "bob", "bob@example.com"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Orgs.SetProfileNotes(ctx, "acme", "bob", "Bob is on the billing team"); err != nil {
			t.Fatal(err)
		}
		s.newClient(t, "acme", "bob")
		before := dbtest.UserRows(t, s.DB, "acme", "bob", "audit_events")
		if len(before) < 4 {
			t.Fatalf("bob has rows in only %d tables, too few to prove the erasure: %v", len(before), before)
		}

		if code, _ := alice.post("/admin/members/alice/remove", url.Values{"confirmed": {"yes"}, "erase": {"yes"}}); code != http.StatusConflict {
			t.Errorf("erasing the last admin: %d", code)
		}
		if code, body := alice.post("/admin/members/bob/remove", url.Values{"confirmed": {"yes"}, "erase": {"yes"}}); code != http.StatusOK {
			t.Fatalf("erase bob: %d\n%s", code, body)
		}
		if left := dbtest.UserRows(t, s.DB, "acme", "bob", "audit_events"); len(left) != 0 {
			t.Errorf("bob's rows left: %v", left)
		}
		var name, notes, profileNotes string
		var email sql.NullString
		var removed db.NullTime
		if err := s.DB.QueryRow(ctx, `SELECT name, notes, profile_notes, email, removed_at FROM users WHERE org_id = 'acme' AND id = 'bob'`).
			Scan(&name, &notes, &profileNotes, &email, &removed); err != nil {
			t.Fatal(err)
		}
		if name != orgs.FormerMember || notes != "" || profileNotes != "" || email.Valid || !removed.Valid {
			t.Errorf("bob's row: %q %q %q %v %v", name, notes, profileNotes, email, removed.Valid)
		}
		if n := apitest.CountRows(t, s.DB, `SELECT COUNT(*) FROM questions WHERE org_id = 'acme' AND asker_id = 'bob'`); n != 1 {
			t.Errorf("bob's question to carol: %d, want it kept", n)
		}
		carol := s.newClient(t, "acme", "carol")
		if _, page := carol.get("/channels/dev"); !strings.Contains(page, "Bob&#39;s deploy note") || !strings.Contains(page, orgs.FormerMember) {
			t.Error("bob's channel message is not kept under a former member")
		}
		if _, page := carol.get("/channels/dev"); strings.Contains(page, ">Bob<") {
			t.Error("the channel still names Bob")
		}
		testkit.WaitFor(t, 10*time.Second, "the erasure's audit event", func() (bool, error) {
			return apitest.CountRows(t, s.DB, `SELECT COUNT(*) FROM audit_events WHERE org_id = 'acme' AND tool = 'web:erase_user' AND outcome = 'ok'`) == 1, nil
		})
	})
}
