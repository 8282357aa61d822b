package inbox_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
)

// resolveAt asks n questions from a to b and declines them all at one
// instant, at.
func resolveAt(t *testing.T, d *db.DB, s *inbox.Service, n int, at time.Time) {
	t.Helper()
	ctx := dbtest.Operator()
	var ids []string
	for i := range n {
		q, err := s.Ask(ctx, acme("a"), inbox.Ask{To: "b", Text: fmt.Sprint("q", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, q.ID)
	}
	orig := d.Now
	d.Now = func() time.Time { return at }
	defer func() { d.Now = orig }()
	for _, id := range ids {
		if _, err := s.Decline(ctx, acme("b"), id, "no"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRepliesPagesAcrossOneInstant pages through replies that were all
// resolved in the same instant, so that every page boundary falls inside
// one resolved_at: each reply comes exactly once, and has_more (a next
// cursor) is given only when another page follows.
func TestRepliesPagesAcrossOneInstant(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(d)
		ctx := dbtest.Operator()
		at := d.Now().Add(time.Minute)
		const replies, limit = 7, 3
		resolveAt(t, d, s, replies, at)

		seen := map[string]bool{}
		cursor := ""
		for page := 0; ; page++ {
			got, next, err := s.Replies(ctx, acme("a"), time.Time{}, cursor, limit)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range got {
				if seen[q.ID] {
					t.Fatalf("page %d repeats %s", page, q.ID)
				}
				seen[q.ID] = true
			}
			if next == "" {
				if len(got) != replies-2*limit {
					t.Fatalf("last page has %d replies, want %d", len(got), replies-2*limit)
				}
				break
			}
			if page > 3 {
				t.Fatal("pagination does not end")
			}
			cursor = next
		}
		if len(seen) != replies {
			t.Fatalf("paged %d distinct replies, want %d", len(seen), replies)
		}

		// since keeps its meaning: resolved strictly after it.
		for _, tc := range []struct {
			since time.Time
			want  int
		}{{at.Add(-time.Microsecond), limit}, {at, 0}} {
			got, _, err := s.Replies(ctx, acme("a"), tc.since, "", limit)
			if err != nil || len(got) != tc.want {
				t.Fatalf("since %v: %d replies, %v; want %d", tc.since, len(got), err, tc.want)
			}
		}
		if _, _, err := s.Replies(ctx, acme("a"), time.Time{}, "not-a-cursor", limit); err == nil {
			t.Fatal("a forged cursor was accepted")
		}
	})
}

// TestRepliesExactlyLimitHasNoMore lists exactly limit replies: one page,
// with no next page announced.
func TestRepliesExactlyLimitHasNoMore(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(d)
		const limit = 4
		resolveAt(t, d, s, limit, d.Now().Add(time.Minute))
		got, next, err := s.Replies(dbtest.Operator(), acme("a"), time.Time{}, "", limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != limit || next != "" {
			t.Fatalf("%d replies, next cursor %q; want %d and none", len(got), next, limit)
		}
	})
}
