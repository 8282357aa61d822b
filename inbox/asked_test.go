package inbox_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/wait"
)

// seedZeta creates org zeta with users a (the same id as acme's a) and z,
// whose questions acme's people must never see.
func seedZeta(t *testing.T, d *db.DB) {
	t.Helper()
	ctx := dbtest.Operator()
	now := d.Now()
	err := d.Tx(ctx, func(tx db.Querier) error {
		if _, err := tx.Exec(ctx, `INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ('zeta', 'Zeta', 'x', $1)`, now); err != nil {
			return err
		}
		for _, u := range []string{"a", "z"} {
			if _, err := tx.Exec(ctx, `INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ('zeta', $1, $1, 'x', 'member', $2, $2)`, u, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// askAtInstant asks n questions from "from" to "to" in acme, all stamped at one
// instant, so that page boundaries fall inside one created_at.
func askAtInstant(t *testing.T, d *db.DB, s *inbox.Service, from, to string, n int, at time.Time) []string {
	t.Helper()
	orig := d.Now
	d.Now = func() time.Time { return at }
	defer func() { d.Now = orig }()
	var ids []string
	for i := range n {
		q, err := s.Ask(dbtest.Operator(), acme(from), inbox.Ask{To: to, Text: fmt.Sprintf("%s asks %s %d", from, to, i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, q.ID)
	}
	return ids
}

// TestAskedPagesNewestFirst pages through an asker's questions, some asked
// in one instant: each comes exactly once, newest first, with no one else's
// question (not the recipient's, not another org's same-named user's), and
// a next cursor only when another page follows.
func TestAskedPagesNewestFirst(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		seedZeta(t, d)
		s := newService(d)
		ctx := dbtest.Operator()
		base := d.Now()
		older := askAtInstant(t, d, s, "a", "b", 2, base)
		same := askAtInstant(t, d, s, "a", "b", 5, base.Add(time.Second))
		askAtInstant(t, d, s, "b", "a", 2, base.Add(2*time.Second))
		if _, err := s.Ask(ctx, ctalk.Caller{OrgID: "zeta", UserID: "a"}, inbox.Ask{To: "z", Text: "another org"}); err != nil {
			t.Fatal(err)
		}

		var got []string
		cursor, pages := "", 0
		for {
			items, next, err := s.Asked(ctx, acme("a"), 3, cursor)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, it := range items {
				if it.From != "a" || it.To != "b" || it.Recipient.Name != "b" {
					t.Fatalf("item %s from %s to %s (%q): not one a asked b", it.ID, it.From, it.To, it.Recipient.Name)
				}
				got = append(got, it.ID)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if pages != 3 || len(got) != 7 {
			t.Fatalf("%d pages, %d questions, want 3 pages of 7: %v", pages, len(got), got)
		}
		seen := map[string]bool{}
		for i, id := range got {
			if seen[id] {
				t.Fatalf("question %s listed twice", id)
			}
			seen[id] = true
			// The first five are the instant's (newest), the last two older.
			if want := i < 5; want != containsID(same, id) {
				t.Fatalf("position %d holds %s; the newest instant's questions come first", i, id)
			}
		}
		for _, id := range older {
			if !seen[id] {
				t.Errorf("older question %s missing", id)
			}
		}
		if _, _, err := s.Asked(ctx, acme("a"), 3, "junk"); ctalk.ErrorCode(err) != ctalk.EInvalid {
			t.Errorf("a forged cursor: %v, want invalid", err)
		}
		if _, _, err := s.Asked(ctx, acme("a"), inbox.MaxListPage+1, ""); ctalk.ErrorCode(err) != ctalk.EInvalid {
			t.Errorf("limit over the maximum: %v, want invalid", err)
		}
	})
}

func containsID(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// TestAskedLeavesRepliesForTheAgent: listing my questions shows the answer
// and the decline reason, yet check_replies (Replies) and wait_for_reply
// still hand both to my agent afterwards.
func TestAskedLeavesRepliesForTheAgent(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(d)
		ctx := dbtest.Operator()
		answered, err := s.Ask(ctx, acme("a"), inbox.Ask{To: "b", Text: "what is the retry logic?"})
		if err != nil {
			t.Fatal(err)
		}
		declined, err := s.Ask(ctx, acme("a"), inbox.Ask{To: "b", Text: "and the budget?"})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Propose(ctx, acme("b"), answered.ID, "three tries, backing off"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Send(ctx, acme("b"), answered.ID, "three tries, backing off"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Decline(ctx, acme("b"), declined.ID, "ask finance"); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			items, _, err := s.Asked(ctx, acme("a"), 10, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != 2 || items[0].Reason != "ask finance" || items[1].Answer != "three tries, backing off" {
				t.Fatalf("asked: %+v", items)
			}
		}
		got, err := s.WaitReply(ctx, acme("a"), answered.ID, wait.Options{Timeout: time.Millisecond})
		if err != nil || len(got) != 1 || got[0].Answer != "three tries, backing off" {
			t.Fatalf("wait_for_reply after the listing: %v %+v", err, got)
		}
		replies, _, err := s.Replies(ctx, acme("a"), time.Time{}, "", 10)
		if err != nil || len(replies) != 2 {
			t.Fatalf("check_replies after the listing: %v, %d replies, want 2", err, len(replies))
		}
		got, err = s.WaitReply(ctx, acme("a"), "", wait.Options{Timeout: time.Millisecond})
		if err != nil || len(got) != 0 {
			t.Fatalf("a second wait: %v %+v, want nothing new", err, got)
		}
	})
}

// TestBetweenBothWays: the history of two people holds the questions each
// asked the other, newest first, up to the limit, with the pair's counts,
// and nothing of a third person.
func TestBetweenBothWays(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(d)
		ctx := dbtest.Operator()
		err := d.Write(ctx, func(q db.Querier) error {
			_, err := q.Exec(ctx, `INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ('acme', 'c', 'c', 'x', 'member', $1, $1)`, d.Now())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		base := d.Now()
		mine := askAtInstant(t, d, s, "a", "b", 3, base)
		theirs := askAtInstant(t, d, s, "b", "a", 2, base.Add(time.Second))
		askAtInstant(t, d, s, "c", "a", 1, base.Add(2*time.Second))

		c, err := s.Between(ctx, acme("a"), "b", 10)
		if err != nil {
			t.Fatal(err)
		}
		if c.YouAsked != 3 || c.TheyAsked != 2 || len(c.Recent) != 5 {
			t.Fatalf("between a and b: asked %d/%d, %d recent; want 3/2, 5", c.YouAsked, c.TheyAsked, len(c.Recent))
		}
		if !containsID(theirs, c.Recent[0].ID) || !containsID(theirs, c.Recent[1].ID) || !containsID(mine, c.Recent[4].ID) {
			t.Errorf("not newest first: %s %s ... %s", c.Recent[0].ID, c.Recent[1].ID, c.Recent[4].ID)
		}
		c, err = s.Between(ctx, acme("a"), "b", 4)
		if err != nil || len(c.Recent) != 4 {
			t.Fatalf("limit 4: %v, %d", err, len(c.Recent))
		}
		c, err = s.Between(ctx, acme("b"), "c", 10)
		if err != nil || len(c.Recent) != 0 || c.YouAsked+c.TheyAsked != 0 {
			t.Fatalf("b and c never talked: %v %+v", err, c)
		}
		// Another org's a and z talked; acme's a and z did not.
		seedZeta(t, d)
		if _, err := s.Ask(ctx, ctalk.Caller{OrgID: "zeta", UserID: "z"}, inbox.Ask{To: "a", Text: "zeta only"}); err != nil {
			t.Fatal(err)
		}
		c, err = s.Between(ctx, acme("a"), "z", 10)
		if err != nil || len(c.Recent) != 0 || c.YouAsked+c.TheyAsked != 0 {
			t.Fatalf("acme's a with zeta's z: %v %+v, want nothing", err, c)
		}
	})
}

// TestAskedPageStatementCount: a page of my questions costs two statements
// (the page and its recipients), whether it holds 1 or 50 questions to as
// many people.
func TestAskedPageStatementCount(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		others := seedSenders(t, d, 50)
		s := newService(d)
		ctx := dbtest.Operator()
		for _, o := range others {
			if _, err := s.Ask(ctx, acme("me"), inbox.Ask{To: o, Text: "a question"}); err != nil {
				t.Fatal(err)
			}
		}
		for _, size := range []int{1, 50} {
			var items []*inbox.AskedItem
			var err error
			n := dbtest.Statements(d, func() { items, _, err = s.Asked(ctx, acme("me"), size, "") })
			if err != nil || len(items) != size {
				t.Fatalf("a page of %d: %v, %d items", size, err, len(items))
			}
			if n != 2 {
				t.Errorf("a page of %d cost %d statements, want 2", size, n)
			}
		}
	})
}
