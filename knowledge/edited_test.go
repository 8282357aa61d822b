package knowledge_test

import (
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestAnAdminsEditSaysWhoEdited: once an admin edits a shared answer,
// search and the look-up before an ask name the admin beside the answerer;
// once the answerer edits it again, the words are theirs again.
func TestAnAdminsEditSaysWhoEdited(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx := dbtest.Operator()
		a := f.share("acme", "al", "ben", "Where is the runbook for payouts?", "In the wiki under payouts.")
		editedBy := func(when string) string {
			t.Helper()
			found, err := f.k.Search(ctx, caller("acme", "cat"), "payouts runbook", 5)
			if err != nil || len(found) != 1 {
				t.Fatalf("%s: search found %v, %v", when, ids(found), err)
			}
			look, err := f.k.Suggest(ctx, caller("acme", "cat"), "Where is the runbook for payouts?")
			offered := look.Held
			if err != nil || len(offered) != 1 {
				t.Fatalf("%s: offered %v, %v", when, ids(offered), err)
			}
			if found[0].EditedBy != offered[0].EditedBy {
				t.Errorf("%s: search says edited by %q, the look-up %q", when, found[0].EditedBy, offered[0].EditedBy)
			}
			return found[0].EditedBy
		}
		if got := editedBy("as shared"); got != "" {
			t.Errorf("as shared, edited by %q", got)
		}
		admin := ctalk.Caller{OrgID: "acme", UserID: "root", Admin: true}
		if err := f.k.Edit(ctx, admin, a.MessageID, "The payouts runbook is in the handbook."); err != nil {
			t.Fatal(err)
		}
		if got := editedBy("after the admin's edit"); got != "root" {
			t.Errorf("after the admin's edit, edited by %q, want root", got)
		}
		if err := f.k.Edit(ctx, caller("acme", "ben"), a.MessageID, "The payouts runbook is in the handbook, chapter 3."); err != nil {
			t.Fatal(err)
		}
		if got := editedBy("after the answerer's edit"); got != "" {
			t.Errorf("after the answerer's own edit, edited by %q, want nobody else", got)
		}
	})
}
