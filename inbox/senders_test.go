package inbox_test

import (
	"slices"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/wait"
)

// TestInboxSenders checks that check_inbox and wait_for_inbox show each
// sender as orgs stores them, read in the statement of the page's context:
// name, ownership, notes, profile notes, and former_member for a sender
// removed since they asked, on a page not yet handed over and on one that
// was.
func TestInboxSenders(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		ctx := dbtest.Operator()
		if _, err := dbtest.Exec(d, `INSERT INTO users (org_id, id, name, password_hash, role, ownership, notes, profile_notes, created_at, updated_at)
			VALUES ('acme', 'c', 'Carol Jones', 'x', 'member', '["billing","alpha-repo"]', 'ask me about invoices', 'on leave in May', $1, $1)`, d.Now()); err != nil {
			t.Fatal(err)
		}
		s := newService(d)
		for _, from := range []string{"b", "c"} {
			if _, err := s.Ask(ctx, acme(from), inbox.Ask{To: "a", Text: "a question from " + from}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := dbtest.Exec(d, `UPDATE users SET removed_at = $1 WHERE org_id = 'acme' AND id = 'b'`, d.Now()); err != nil {
			t.Fatal(err)
		}
		want := map[string]inbox.Sender{
			"b": {UserID: "b", Name: "b", Ownership: []string{}, FormerMember: true},
			"c": {UserID: "c", Name: "Carol Jones", Ownership: []string{"billing", "alpha-repo"}, Notes: "ask me about invoices", ProfileNotes: "on leave in May"},
		}
		check := func(t *testing.T, items []*inbox.InboxItem) {
			t.Helper()
			if len(items) != len(want) {
				t.Fatalf("%d items, want %d", len(items), len(want))
			}
			for _, it := range items {
				got, w := it.Sender, want[it.From]
				if got.UserID != w.UserID || got.Name != w.Name || !slices.Equal(got.Ownership, w.Ownership) || got.Ownership == nil ||
					got.Notes != w.Notes || got.ProfileNotes != w.ProfileNotes || got.FormerMember != w.FormerMember {
					t.Errorf("sender of %s: got %+v, want %+v", it.ID, got, w)
				}
			}
		}
		t.Run("not yet handed over", func(t *testing.T) {
			items, _, err := s.Inbox(ctx, acme("a"), 10, "")
			if err != nil {
				t.Fatal(err)
			}
			check(t, items)
		})
		t.Run("handed over", func(t *testing.T) {
			items, _, err := s.Inbox(ctx, acme("a"), 10, "")
			if err != nil {
				t.Fatal(err)
			}
			check(t, items)
		})
		t.Run("delivered to a wait", func(t *testing.T) {
			if _, err := dbtest.Exec(d, `UPDATE questions SET recipient_handed_at = NULL WHERE org_id = 'acme'`); err != nil {
				t.Fatal(err)
			}
			got, err := s.WaitInbox(ctx, acme("a"), wait.Options{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			check(t, got.Questions)
		})
	})
}
