package inbox_test

import (
	"fmt"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/wait"
)

// pageStatements is what a page of the inbox may cost, whatever its size
// and however many people asked, once every question on it was handed over:
// the page (which says whether any of its questions was not yet handed
// over), and its whole context (senders, pair statistics, recent exchanges,
// latest drafts) in one statement. newPageStatements is the cost
// of a page that holds questions not yet handed over: the page, then in a
// transaction the page again, the read of context and one UPDATE that
// marks the page handed over. deliveryStatements is the cost of a wait that
// hands questions over: one UPDATE claims the questions and returns them,
// one reads their context, one claims withdrawal notices.
const (
	pageStatements     = 2
	newPageStatements  = 4
	deliveryStatements = 3
)

// seedSenders creates org acme with user me and users s0 to s(n-1).
func seedSenders(t *testing.T, d *db.DB, n int) []string {
	t.Helper()
	now := d.Now()
	var senders []string
	err := d.Tx(dbtest.Operator(), func(tx db.Querier) error {
		ctx := dbtest.Operator()
		if _, err := tx.Exec(ctx, `INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ('acme', 'Acme', 'x', $1)`, now); err != nil {
			return err
		}
		for i := range n + 1 {
			id := "me"
			if i > 0 {
				id = fmt.Sprintf("s%d", i-1)
				senders = append(senders, id)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO users (org_id, id, name, password_hash, role, ownership, created_at, updated_at) VALUES ('acme', $1, $1, 'x', 'member', '["billing"]', $2, $2)`, id, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return senders
}

// TestInboxPageStatementCount checks that a page of check_inbox, and a
// delivery of a waiting inbox, cost a fixed number of statements for pages
// of 1, 10 and 50 questions from as many people, each with a history and
// some with drafts; it used to be up to 51 for a page of 10.
func TestInboxPageStatementCount(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		const senders = 50
		ss := seedSenders(t, d, senders)
		s := newService(d)
		ctx := dbtest.Operator()
		// A history with every sender: me asked them, and they answered.
		for _, o := range ss {
			q, err := s.Ask(ctx, acme("me"), inbox.Ask{To: o, Text: "earlier question"})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Propose(ctx, acme(o), q.ID, "earlier answer"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Send(ctx, acme(o), q.ID, "earlier answer"); err != nil {
				t.Fatal(err)
			}
		}
		// Two pending questions from every sender, in rounds, so that a page
		// of n holds n senders; every other one of the first round has a draft.
		for round := range 2 {
			for i, o := range ss {
				q, err := s.Ask(ctx, acme(o), inbox.Ask{To: "me", Text: fmt.Sprintf("question %d from %s", round, o)})
				if err != nil {
					t.Fatal(err)
				}
				if round == 0 && i%2 == 0 {
					if _, _, err := s.Propose(ctx, acme("me"), q.ID, "a draft"); err != nil {
						t.Fatal(err)
					}
				}
			}
		}

		for _, size := range []int{1, 10, 50} {
			t.Run(fmt.Sprintf("page of %d", size), func(t *testing.T) {
				var items []*inbox.InboxItem
				var err error
				n := dbtest.Statements(d, func() { items, _, err = s.Inbox(ctx, acme("me"), size, "") })
				if err != nil {
					t.Fatal(err)
				}
				if n != newPageStatements {
					t.Errorf("a page of %d with new questions cost %d statements, want %d", size, n, newPageStatements)
				}
				n = dbtest.Statements(d, func() { items, _, err = s.Inbox(ctx, acme("me"), size, "") })
				if err != nil {
					t.Fatal(err)
				}
				if len(items) != size {
					t.Fatalf("%d items, want %d", len(items), size)
				}
				for i, it := range items {
					if it.Sender.UserID != ss[i] || len(it.History.RecentExchanges) != 1 || it.History.YouAsked != 1 || it.History.TheyAsked != 2 {
						t.Fatalf("item %d: sender %s, %d recent exchanges, asked %d/%d; want %s, 1, 1/2", i, it.Sender.UserID, len(it.History.RecentExchanges), it.History.YouAsked, it.History.TheyAsked, ss[i])
					}
					if hasDraft := it.LatestDraft != nil; hasDraft != (i%2 == 0) {
						t.Fatalf("item %d: draft %v, want %v", i, hasDraft, i%2 == 0)
					}
				}
				if n != pageStatements {
					t.Errorf("a page of %d cost %d statements, want %d", size, n, pageStatements)
				}
			})
		}

		// A waiting inbox hands over what is unhanded: the second round,
		// MaxHanded at a time.
		var d1 *inbox.Delivery
		var err error
		n := dbtest.Statements(d, func() { d1, err = s.WaitInbox(ctx, acme("me"), wait.Options{}, nil) })
		if err != nil {
			t.Fatal(err)
		}
		if len(d1.Questions) != inbox.MaxHanded {
			t.Fatalf("the wait handed over %d questions, want %d", len(d1.Questions), inbox.MaxHanded)
		}
		if n != deliveryStatements {
			t.Errorf("a delivery of %d questions cost %d statements, want %d", len(d1.Questions), n, deliveryStatements)
		}
	})
}
