package knowledge

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestIndexFindsWhatJudgeOffers holds the look-up's index to the judge
// of its offers: for the corpus's questions and searches, and for
// questions of some words of its answers and prefixes of others, every
// answer that judge holds a question back with or shows as related is
// among those the index picks to read.
func TestIndexFindsWhatJudgeOffers(t *testing.T) {
	raw, err := os.ReadFile("testdata/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Answers []struct{ Q, A string } `json:"answers"`
		Probes  []struct{ Q string }    `json:"probes"`
		Asks    []struct{ Q string }    `json:"asks"`
		Novel   []string                `json:"novel"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	x := &orgIndex{postings: map[string][]uint32{}}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, a := range c.Answers {
		x.add(string(rune('a'+i)), at.Add(time.Duration(i)*time.Hour), a.Q, a.A)
	}
	questions := slices.Clone(c.Novel)
	for _, p := range append(c.Probes, c.Asks...) {
		questions = append(questions, p.Q)
	}
	for i, a := range c.Answers {
		words, other := terms(a.Q+" "+a.A), terms(c.Answers[(i+1)%len(c.Answers)].A)
		questions = append(questions, strings.Join(words[:min(3, len(words))], " ")+" "+other[0][:min(3, len(other[0]))]+`* "`+strings.Join(other[:min(2, len(other))], " ")+`"`)
	}
	offered := 0
	for _, text := range questions {
		lq := newLookQuery(text, nil)
		var want []string
		for i, a := range c.Answers {
			if judge(lq, &Answer{Question: a.Q, Answer: a.A}).verdict != unrelated {
				want = append(want, x.ids[i])
			}
		}
		offered += min(len(want), 1)
		got := x.best(lq, len(c.Answers))
		for _, id := range want {
			if !slices.Contains(got, id) {
				t.Errorf("%q: judge offers %s, which the index does not pick (%v)", text, id, got)
			}
		}
	}
	if offered < 30 {
		t.Errorf("%d questions offer an answer; want at least 30", offered)
	}
}

// TestIndexKeepsItsBudget: the indexes of a replica's orgs together stay
// within indexBudget, the newest kept, and an older version of an org's
// index never replaces a newer one.
func TestIndexKeepsItsBudget(t *testing.T) {
	c := &index{orgs: map[string]*orgIndex{}}
	for i := range 10 {
		c.keep(string(rune('a'+i)), &orgIndex{version: 2, bytes: indexBudget / 4})
		if c.bytes > indexBudget || c.orgs[string(rune('a'+i))] == nil {
			t.Fatalf("after %d orgs: %d bytes held, the newest held %v", i+1, c.bytes, c.orgs[string(rune('a'+i))] != nil)
		}
	}
	if len(c.orgs) != 4 {
		t.Errorf("%d orgs held, want 4 of a quarter of the budget each", len(c.orgs))
	}
	c.keep("j", &orgIndex{version: 1, bytes: 1})
	if x := c.orgs["j"]; x == nil || x.version != 2 {
		t.Errorf("an older index replaced the newer: %+v", x)
	}
	c.keep("j", &orgIndex{version: 3, bytes: 10})
	sum := 0
	for _, x := range c.orgs {
		sum += x.bytes
	}
	if c.orgs["j"].version != 3 || c.bytes != sum {
		t.Errorf("held %d bytes by count, %d by sum, j at version %d; want equal and 3", c.bytes, sum, c.orgs["j"].version)
	}
}
