package channels

import (
	"slices"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

func TestFTSQuery(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`retry logic`:                   `"retry" AND "logic"`,
		`"exponential backoff" -jitter`: `"exponential backoff" NOT "jitter"`,
		`NEAR(a b) OR c*`:               `"NEAR(a" AND "b)" AND "OR" AND "c*"`,
		`say "hi`:                       `"say" AND "hi"`,
		`quote"inside`:                  `"quote""inside"`,
	} {
		got, err := ftsQuery(in)
		if err != nil || got != want {
			t.Errorf("ftsQuery(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{`-only`, `!!! ...`, `""`} {
		if _, err := ftsQuery(in); ctalk.ErrorCode(err) != ctalk.EInvalid {
			t.Errorf("ftsQuery(%q): %v, want invalid", in, err)
		}
	}
}

func TestSearch(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		must(s.Create(ctx, alice, NewChannel{Name: "eng", Members: []string{"bob"}}))
		must(s.Create(ctx, alice, NewChannel{Name: "hr", Private: true}))
		must(s.Create(ctx, alice, NewChannel{Name: "random"}))
		must(s.Create(ctx, mallory, NewChannel{Name: "eng"}))

		long := must(s.Post(ctx, alice, Post{Channel: "eng", Text: "we could talk about backoff some day, when the release of the product is finally done and everyone is relaxed"}))
		short := must(s.Post(ctx, bob, Post{Channel: "eng", Text: "backoff: exponential backoff, backoff everywhere"}))
		must(s.Post(ctx, alice, Post{Channel: "eng", Text: "the retries use jitter"}))
		must(s.Post(ctx, alice, Post{Channel: "hr", Text: "backoff on salary talks"}))
		must(s.Post(ctx, alice, Post{Channel: "random", Text: "backoff from lunch"}))
		must(s.Post(ctx, mallory, Post{Channel: "eng", Text: "backoff in the other org"}))

		search := func(c ctalk.Caller, in Search) []string {
			t.Helper()
			in.Limit = 20
			ms, err := s.Search(ctx, c, in)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, m := range ms {
				ids = append(ids, m.ID)
			}
			return ids
		}

		// Bob reads only eng: not the private hr, not random he never
		// joined, not the other org's eng. The denser match ranks first.
		if got := search(bob, Search{Query: "backoff"}); !slices.Equal(got, []string{short.ID, long.ID}) {
			t.Fatalf("bob's search: %q, want [short long]", got)
		}
		if got := search(bob, Search{Query: "retry"}); len(got) != 1 {
			t.Fatalf(`"retry" should find "retries" by its stem; got %q`, got)
		}
		if got := search(bob, Search{Query: `"exponential backoff"`}); !slices.Equal(got, []string{short.ID}) {
			t.Fatalf("phrase: %q", got)
		}
		if got := search(bob, Search{Query: `backoff -exponential`}); !slices.Equal(got, []string{long.ID}) {
			t.Fatalf("exclusion: %q", got)
		}
		if got := search(bob, Search{Query: "backoff", From: "alice"}); !slices.Equal(got, []string{long.ID}) {
			t.Fatalf("author filter: %q", got)
		}
		if got := search(bob, Search{Query: "backoff", Channel: "#eng", Since: short.CreatedAt}); !slices.Equal(got, []string{short.ID}) {
			t.Fatalf("since filter: %q", got)
		}
		if got := search(bob, Search{Query: "backoff", Until: short.CreatedAt}); !slices.Equal(got, []string{long.ID}) {
			t.Fatalf("until filter: %q", got)
		}
		if got := search(bob, Search{Query: "backoff", Channel: "random"}); len(got) != 0 {
			t.Fatalf("random, which bob has not joined: %q", got)
		}
		if got := search(alice, Search{Query: "backoff"}); len(got) != 4 {
			t.Fatalf("alice, in eng, hr and random, found %d, want 4", len(got))
		}
		if got := search(alice, Search{Query: "backoff", Since: time.Now().Add(time.Hour)}); len(got) != 0 {
			t.Fatalf("future since: %q", got)
		}
		must(s.Leave(ctx, bob, "eng"))
		if got := search(bob, Search{Query: "backoff"}); len(got) != 0 {
			t.Fatalf("after leaving eng, bob still finds %q", got)
		}
	})
}
