package channels

import (
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestSearchAndCursorsThroughPooler runs the two statements that pass
// options or arrays to Postgres, search (planned for each query) and the
// batched read-cursor write, through PgBouncer in transaction mode.
func TestSearchAndCursorsThroughPooler(t *testing.T) {
	t.Parallel()
	p := dbtest.PgBouncer(t)
	d, err := db.Open(dbtest.Operator(), db.Config{URL: p.URL, DirectURL: p.DirectURL})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := dbtest.Operator()
	s := fixture(t, d)
	must(s.Create(ctx, alice, NewChannel{Name: "dev", Members: []string{"bob", "carol"}}))
	must(s.Post(ctx, alice, Post{Channel: "dev", Text: "the retry logic of alpha"}))
	for range 7 { // past the five runs after which a prepared statement may go generic
		if got := must(s.Search(ctx, bob, Search{Query: "retries", Limit: 10})); len(got) != 1 {
			t.Fatalf("search found %d messages, want 1", len(got))
		}
	}
	for _, c := range []ctalk.Caller{bob, carol} {
		must(s.Messages(ctx, c, "dev", Read{Limit: 10}))
	}
	s.Close()
	for _, c := range []ctalk.Caller{bob, carol} {
		if got := unreadOf(t, NewService(d, DefaultConfig(), nil), c, "dev"); got != 0 {
			t.Errorf("%s: %d unread after the batch, want 0", c.UserID, got)
		}
	}
}
