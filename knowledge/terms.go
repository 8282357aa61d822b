package knowledge

import "strings"

// form is one way of saying a term: its words (American spelling) and
// their stems, all of which a text must hold.
type form struct{ words, stems []string }

// term is one thing a query asks about: a word, or the words of a
// glossary entry, found in a text when one of its forms is; or a prefix
// (word*), found when a word of the text starts with it.
type term struct {
	forms  []form
	prefix string
	// quoted marks a word of a "quoted phrase", which the engines match
	// as the phrase, not alone.
	quoted bool
}

// key names the term, for telling two alike.
func (t term) key() string {
	if t.prefix != "" {
		return t.prefix + "*"
	}
	return strings.Join(t.forms[0].stems, " ")
}

// in reports whether set, stems, holds the term.
func (t term) in(set map[string]bool) bool {
	if t.prefix != "" {
		return hasPrefix(set, t.prefix)
	}
	for _, f := range t.forms {
		all := true
		for _, st := range f.stems {
			all = all && set[st]
		}
		if all {
			return true
		}
	}
	return false
}

// glossary is an org's synonyms and abbreviations: classes of forms that
// mean the same (SSO, single sign-on), each form a word or words.
type glossary struct {
	classes [][]form
	// starts holds, by the first stem of each form, the classes whose
	// forms start with it.
	starts map[string][]int
}

// newGlossary returns the glossary of entries (a term and what it means,
// each one class with the others sharing a form), nil when empty.
func newGlossary(entries []GlossaryEntry) *glossary {
	if len(entries) == 0 {
		return nil
	}
	// Classes by the stems of their forms, merged as entries join them.
	classOf := map[string]int{}
	var classes [][]form
	for _, e := range entries {
		a, b := glossForm(e.Term), glossForm(e.Means)
		if len(a.stems) == 0 || len(b.stems) == 0 {
			continue
		}
		ka, kb := strings.Join(a.stems, " "), strings.Join(b.stems, " ")
		ca, okA := classOf[ka]
		cb, okB := classOf[kb]
		switch {
		case !okA && !okB:
			classOf[ka], classOf[kb] = len(classes), len(classes)
			classes = append(classes, []form{a, b})
		case okA && !okB:
			classOf[kb] = ca
			classes[ca] = append(classes[ca], b)
		case !okA && okB:
			classOf[ka] = cb
			classes[cb] = append(classes[cb], a)
		case ca != cb:
			for _, f := range classes[cb] {
				classOf[strings.Join(f.stems, " ")] = ca
			}
			classes[ca], classes[cb] = append(classes[ca], classes[cb]...), nil
		}
	}
	g := &glossary{starts: map[string][]int{}}
	for _, c := range classes {
		if len(c) == 0 {
			continue
		}
		i := len(g.classes)
		g.classes = append(g.classes, c)
		for _, f := range c {
			if !containsInt(g.starts[f.stems[0]], i) {
				g.starts[f.stems[0]] = append(g.starts[f.stems[0]], i)
			}
		}
	}
	return g
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// glossForm is the form of a glossary's words: those that are not stop
// words.
func glossForm(s string) form {
	var f form
	for _, w := range words(s) {
		if !stopWords[w] {
			f.words, f.stems = append(f.words, w), append(f.stems, stem(w))
		}
	}
	return f
}

// termsOf returns the terms of ws, content words in order: each word a
// term, except where g has a form starting there, whose words make one
// term with the forms of its class (the longest form that fits). Each term
// once.
func termsOf(ws []string, g *glossary) []term {
	sts := make([]string, len(ws))
	for i, w := range ws {
		sts[i] = stem(w)
	}
	var out []term
	seen := map[string]bool{}
	add := func(t term) {
		if k := t.key(); !seen[k] {
			seen[k] = true
			out = append(out, t)
		}
	}
	for i := 0; i < len(ws); i++ {
		class, n := -1, 0
		if g != nil {
			for _, c := range g.starts[sts[i]] {
				for _, f := range g.classes[c] {
					if len(f.stems) > n && i+len(f.stems) <= len(sts) && equal(f.stems, sts[i:i+len(f.stems)]) {
						class, n = c, len(f.stems)
					}
				}
			}
		}
		if class < 0 {
			add(term{forms: []form{{words: ws[i : i+1], stems: sts[i : i+1]}}})
			continue
		}
		t := term{forms: []form{{words: ws[i : i+n], stems: sts[i : i+n]}}}
		for _, f := range g.classes[class] {
			if !equal(f.stems, t.forms[0].stems) {
				t.forms = append(t.forms, f)
			}
		}
		add(t)
		i += n - 1
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// contentWords returns the words of s that are not stop words, in order.
func contentWords(s string) []string {
	var out []string
	for _, w := range words(s) {
		if !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}
