package knowledge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/knowledge"
)

// evalSet is testdata/eval.json, the look-first's evaluation set: an org of
// ten people and their shared answers, the org's glossary, rephrasings of
// the answers' questions, unrelated questions and near-misses (the same
// words, another question). In each list the items at odd positions are
// the held-out part: the rules were tuned on the others only.
type evalSet struct {
	Ownership map[string][]string `json:"ownership"`
	Glossary  [][2]string         `json:"glossary"`
	Answers   []struct {
		By string `json:"by"`
		Q  string `json:"q"`
		A  string `json:"a"`
	} `json:"answers"`
	Rephrasings []struct {
		Q    string `json:"q"`
		Want int    `json:"want"`
		Kind string `json:"kind"`
	} `json:"rephrasings"`
	Unrelated []string   `json:"unrelated"`
	Near      []evalNear `json:"near"`
	// NearTuning are near-misses of the tuning part only.
	NearTuning []evalNear `json:"near_tuning"`
}

type evalNear struct {
	Q    string `json:"q"`
	Near int    `json:"near"`
}

// evalPart is the figures of one part of the set.
type evalPart struct {
	// rephrasings sharing two or more content words with their answer,
	// and of those: the right answer first in what the look-up held the
	// question back with (held), or in what it held back or showed as
	// related (offered); and find_answers' right answer first (top1).
	shared, held, offered, top1 int
	// all rephrasings, and the same counts over them.
	all, heldAll, offeredAll, top1All int
	// unrelated and near-miss questions, how many were held back, and how
	// many came with related answers.
	unrelated, unrelatedHeld, unrelatedRelated int
	near, nearHeld, nearRelated                int
	misses                                     []string
}

func (p *evalPart) String() string {
	return fmt.Sprintf("rephrasings sharing 2+ words: %d, right answer first: held back %d (%.0f%%), offered %d (%.0f%%), find_answers top-1 %d (%.0f%%); all rephrasings: %d, held %d, offered %d, top-1 %d; unrelated: %d, held %d, related %d; near-misses: %d, held %d, related %d",
		p.shared, p.held, pct(p.held, p.shared), p.offered, pct(p.offered, p.shared), p.top1, pct(p.top1, p.shared),
		p.all, p.heldAll, p.offeredAll, p.top1All, p.unrelated, p.unrelatedHeld, p.unrelatedRelated, p.near, p.nearHeld, p.nearRelated)
}

func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// contentWords are the words of s that the evaluation counts as shared,
// whatever the look-up's own analysis: lower-case words of letters and
// digits, what follows an apostrophe left out, common words left out, two
// words the same when their first five letters are.
func contentWords(s string) map[string]bool {
	out := map[string]bool{}
	s = strings.NewReplacer("’", "'", "‘", "'").Replace(strings.ToLower(s))
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' }) {
		w, _, _ = strings.Cut(w, "'")
		if w == "" || evalStop[w] {
			continue
		}
		if r := []rune(w); len(r) > 5 {
			w = string(r[:5])
		}
		out[w] = true
	}
	return out
}

var evalStop = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about after all also am an and any are as at be been before being but by can could
		did do does doing for from get gets got had has have he her here his how i if in into is it its me my no not
		of on or our should so some than that the their them then there these they this those to too up was we were
		what when where which while who whom why will with would you your`) {
		evalStop[w] = true
	}
}

// evalLook is the look-up as the evaluation judges it: the answers a
// question is held back with, and those shown with it when asked.
type evalLook func(ctx context.Context, q string) (held, related []*knowledge.Answer, err error)

// runEval measures look and find_answers on the set's two parts (tune,
// held-out).
func runEval(t *testing.T, f *fixture, set evalSet, ids []string, look evalLook) (tune, held *evalPart) {
	t.Helper()
	ctx, me := dbtest.Operator(), caller("acme", "root")
	parts := [2]*evalPart{{}, {}}
	first := func(as []*knowledge.Answer, id string) bool { return len(as) > 0 && as[0].MessageID == id }
	for i, r := range set.Rephrasings {
		p := parts[i%2]
		heldBy, related, err := look(ctx, r.Q)
		if err != nil {
			t.Fatal(err)
		}
		found, err := f.k.Search(ctx, me, r.Q, 3)
		if err != nil {
			t.Fatalf("Search(%q): %v", r.Q, err)
		}
		want := ids[r.Want]
		a := set.Answers[r.Want]
		n := 0
		for w := range contentWords(r.Q) {
			if contentWords(a.Q + " " + a.A)[w] {
				n++
			}
		}
		h, o, top := first(heldBy, want), first(heldBy, want) || len(heldBy) == 0 && first(related, want), first(found, want)
		p.all++
		p.heldAll += b2i(h)
		p.offeredAll += b2i(o)
		p.top1All += b2i(top)
		if n >= 2 {
			p.shared++
			p.held += b2i(h)
			p.offered += b2i(o)
			p.top1 += b2i(top)
		}
		if !h {
			p.misses = append(p.misses, fmt.Sprintf("rephrasing (%s, %d shared) not held back: %q, held %v related %v, want %s", r.Kind, n, r.Q, ids2(heldBy), ids2(related), want))
		}
		if !top {
			p.misses = append(p.misses, fmt.Sprintf("find_answers(%q) first %v, want %s", r.Q, ids2(found), want))
		}
	}
	for i, q := range set.Unrelated {
		p := parts[i%2]
		heldBy, related, err := look(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		p.unrelated++
		p.unrelatedHeld += b2i(len(heldBy) > 0)
		p.unrelatedRelated += b2i(len(related) > 0)
		if len(heldBy)+len(related) > 0 {
			p.misses = append(p.misses, fmt.Sprintf("unrelated %q: held %v related %v", q, ids2(heldBy), ids2(related)))
		}
	}
	near := set.Near
	for _, n := range set.NearTuning {
		// At even positions, the tuning part's.
		near = append(near, n, evalNear{Near: -1})
	}
	for i, n := range near {
		if n.Near < 0 {
			continue
		}
		p := parts[i%2]
		heldBy, related, err := look(ctx, n.Q)
		if err != nil {
			t.Fatal(err)
		}
		p.near++
		p.nearHeld += b2i(len(heldBy) > 0)
		p.nearRelated += b2i(len(related) > 0)
		if len(heldBy) > 0 {
			p.misses = append(p.misses, fmt.Sprintf("near-miss held back: %q, held %v (near %s)", n.Q, ids2(heldBy), ids[n.Near]))
		}
	}
	return parts[0], parts[1]
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func ids2(as []*knowledge.Answer) string { return strings.Join(ids(as), ",") }

// loadEval shares the set's answers in acme, with its people, their
// ownership and the glossary.
func loadEval(t *testing.T, f *fixture) (evalSet, []string) {
	t.Helper()
	raw, err := os.ReadFile("testdata/eval.json")
	if err != nil {
		t.Fatal(err)
	}
	var set evalSet
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	now := f.d.Now()
	for _, u := range []string{"fay", "gus", "hal", "ivy", "jon"} {
		f.exec(`INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ('acme', $1, $1, 'x', 'member', $2, $2)`, u, now)
	}
	for user, tags := range set.Ownership {
		f.own("acme", user, tags...)
	}
	admin := adminCaller("acme", "root")
	for _, e := range set.Glossary {
		if err := f.k.SetGlossaryEntry(dbtest.Operator(), admin, e[0], e[1]); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	for _, a := range set.Answers {
		ids = append(ids, f.share("acme", "al", a.By, a.Q, a.A).MessageID)
	}
	return set, ids
}

// TestLookFirstEvaluation measures the look-first and find_answers on the
// evaluation set, on both engines, with the replica's index and with the
// engine's search (an org too big to index), reports both parts (go test
// -v; EVAL_VERBOSE=1 lists the tuning part's misses) and holds the
// held-out part to the targets (BENCHMARKS.md).
func TestLookFirstEvaluation(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		set, ids := loadEval(t, f)
		me := caller("acme", "root")
		look := func(ctx context.Context, q string) ([]*knowledge.Answer, []*knowledge.Answer, error) {
			found, err := f.k.Suggest(ctx, me, q)
			return found.Held, found.Related, err
		}
		for _, mode := range []string{"index", "searched"} {
			if mode == "searched" {
				f.exec(`UPDATE shared_answer_counts SET answers = 2001, version = version + 1 WHERE org_id = 'acme'`)
			}
			tune, held := runEval(t, f, set, ids, look)
			t.Logf("%s, %s, tuning part: %s", d.Engine, mode, tune)
			t.Logf("%s, %s, held-out part: %s", d.Engine, mode, held)
			// The targets, on the held-out part: the right answer offered
			// first (held back with, or related) for 90% of the
			// rephrasings sharing two or more content words with it; no
			// unrelated question held back; at most one near-miss in
			// twenty; find_answers' right answer first as often as before
			// the look-up judged the question (every one of them).
			if pct(held.offered, held.shared) < 90 {
				t.Errorf("%s, %s: the right answer offered first for %d of %d held-out rephrasings, want 90%%", d.Engine, mode, held.offered, held.shared)
			}
			if held.unrelatedHeld > 0 || held.nearHeld*20 > held.near {
				t.Errorf("%s, %s: %d unrelated and %d of %d near-miss held-out questions held back, want none and at most one in twenty", d.Engine, mode, held.unrelatedHeld, held.nearHeld, held.near)
			}
			if held.top1All < held.all || held.top1 < held.shared {
				t.Errorf("%s, %s: find_answers ranks the right answer first for %d of %d held-out rephrasings, as before: all", d.Engine, mode, held.top1All, held.all)
			}
			if os.Getenv("EVAL_VERBOSE") != "" {
				for _, m := range tune.misses {
					t.Logf("  tune: %s", m)
				}
			}
			if os.Getenv("EVAL_FIND_ANSWERS") != "" {
				for _, m := range held.misses {
					if strings.HasPrefix(m, "find_answers") {
						t.Logf("  held-out: %s", m)
					}
				}
			}
		}
	})
}
