package knowledge_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// corpus is testdata/corpus.json: shared answers, their answerers'
// ownership, rephrased searches (probes) and questions (asks) each with the
// index of the answer that must rank first, and questions that no answer
// should hold back (novel).
type corpus struct {
	Answers []struct {
		By string `json:"by"`
		Q  string `json:"q"`
		A  string `json:"a"`
	} `json:"answers"`
	Ownership map[string][]string `json:"ownership"`
	Probes    []struct {
		Q    string `json:"q"`
		Want int    `json:"want"`
	} `json:"probes"`
	Asks []struct {
		Q    string `json:"q"`
		Want int    `json:"want"`
	} `json:"asks"`
	Novel []string `json:"novel"`
}

func loadCorpus(t *testing.T, f *fixture) (corpus, []string) {
	t.Helper()
	raw, err := os.ReadFile("testdata/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var c corpus
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	for user, tags := range c.Ownership {
		f.own("acme", user, tags...)
	}
	var ids []string
	for _, a := range c.Answers {
		ids = append(ids, f.share("acme", "al", a.By, a.Q, a.A).MessageID)
	}
	return c, ids
}

// TestSearchQuality holds full-text ranking to a fixed corpus on both
// engines: each rephrased search finds its answer first, the look-up
// offers each rephrased question's answer first (holding the question
// back, or as related when the question adds a word the answer does not
// address), and no unrelated question is held back.
func TestSearchQuality(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx := dbtest.Operator()
		c, want := loadCorpus(t, f)
		me := caller("acme", "root")
		for _, p := range c.Probes {
			got, err := f.k.Search(ctx, me, p.Q, 3)
			if err != nil {
				t.Fatalf("Search(%q): %v", p.Q, err)
			}
			if len(got) == 0 || got[0].MessageID != want[p.Want] {
				t.Errorf("Search(%q) ranks %v first, want %s (%q)", p.Q, ids(got), want[p.Want], c.Answers[p.Want].Q)
			}
		}
		for _, a := range c.Asks {
			found, err := f.k.Suggest(ctx, me, a.Q)
			if err != nil {
				t.Fatal(err)
			}
			got := append(found.Held, found.Related...)
			if len(got) == 0 || got[0].MessageID != want[a.Want] {
				t.Errorf("Suggest(%q) = %v, want %s first", a.Q, ids(got), want[a.Want])
			}
		}
		for _, q := range c.Novel {
			if got, err := held(f.k.Suggest(ctx, me, q)); err != nil || len(got) != 0 {
				t.Errorf("Suggest(%q) holds the question back with %v, %v", q, ids(got), err)
			}
		}
	})
}
