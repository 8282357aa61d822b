package knowledge

import (
	"strings"

	"github.com/ctalk/ctalk"
)

// query is a search parsed once for both engines: plain words, "quoted
// phrases" and word* prefixes, with stop words dropped, and the terms that
// Go compares (analyze.go), each with the forms the org's glossary gives
// it. Any term may match; answers matching more of them, and more closely,
// rank higher.
type query struct {
	words, phrases, prefixes []string
	terms                    []term
}

// parseQuery reads a search query: "quoted phrases", word* prefixes and
// words, each made of letters and digits only, so that no character of it
// is read as an operator by either engine.
//
// Returns EInvalid when nothing is left to search for.
func parseQuery(name, raw string, maxLen int) (query, error) {
	text, err := ctalk.Text(name, raw, maxLen, true)
	if err != nil {
		return query{}, err
	}
	q := splitQuery(text)
	if len(q.words)+len(q.phrases)+len(q.prefixes) == 0 {
		return q, ctalk.Errorf(ctalk.EInvalid, "%s has no word to search for (common words such as \"how\" or \"the\" are left out); give the subject, e.g. \"retry logic\"", name)
	}
	return q, nil
}

// splitQuery reads the words, "quoted phrases" and prefixes of text, and
// their terms without a glossary (see withGlossary).
func splitQuery(text string) query {
	var q query
	for i, part := range strings.Split(text, `"`) {
		if i%2 == 1 {
			if ws := words(part); len(ws) > 1 {
				q.phrases = append(q.phrases, strings.Join(ws, " "))
				continue
			}
		}
		for _, f := range strings.Fields(part) {
			prefix := strings.HasSuffix(f, "*")
			ws := words(f)
			for j, w := range ws {
				switch {
				case prefix && j == len(ws)-1 && len([]rune(w)) >= 2:
					q.prefixes = append(q.prefixes, w)
				case !stopWords[w]:
					q.words = append(q.words, w)
				}
			}
		}
	}
	q.words, q.phrases = distinct(q.words, maxTerms), distinct(q.phrases, maxTerms/4)
	return q.withGlossary(nil)
}

// withGlossary returns q with its terms read through g: a word or words
// that g holds stand for every form of their class.
func (q query) withGlossary(g *glossary) query {
	q.terms = termsOf(q.words, g)
	var quoted []string
	for _, p := range q.phrases {
		quoted = append(quoted, strings.Fields(p)...)
	}
	seen := map[string]bool{}
	for _, t := range q.terms {
		seen[t.key()] = true
	}
	for _, t := range termsOf(distinct(contentWords(strings.Join(quoted, " ")), 2*maxTerms), nil) {
		if !seen[t.key()] {
			t.quoted = true
			q.terms = append(q.terms, t)
		}
	}
	for _, p := range q.prefixes {
		q.terms = append(q.terms, term{prefix: p})
	}
	return q
}

// parseSearch reads a search of name, text, for at most limit results
// (DefaultLimit when 0).
//
// Returns EInvalid.
func parseSearch(name, text string, limit int) (query, int, error) {
	if limit < 0 || limit > MaxLimit {
		return query{}, 0, ctalk.Errorf(ctalk.EInvalid, "limit must be 1 to %d", MaxLimit)
	}
	if limit == 0 {
		limit = DefaultLimit
	}
	q, err := parseQuery(name, text, MaxQueryLen)
	return q, limit, err
}

// maxTerms bounds the distinct words of one search: a long question is
// judged by its first forty words.
const maxTerms = 40

// distinct returns the first n distinct words of ws.
func distinct(ws []string, n int) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, w := range ws {
		if !seen[w] && len(out) < n {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// size is the number of q's terms.
func (q query) size() int {
	return len(q.terms)
}

// terms splits s into its words (see words).
func terms(s string) []string {
	return words(s)
}

// alternatives returns the engines' texts of t: each form's words in every
// spelling; a form of several words as its words, any of them (alone) or
// all (together), not as a phrase, which Postgres's parser would miss in
// hyphenated text ("sign-on" is three tokens to it).
func (t term) alternatives(together bool) []string {
	var out []string
	for _, f := range t.forms {
		var ws []string
		for _, w := range f.words {
			for _, v := range spellings(w) {
				if !contains(ws, v) {
					ws = append(ws, v)
				}
			}
		}
		if together && len(f.words) > 1 {
			ws = []string{"(" + strings.Join(ws, " & ") + ")"}
		}
		for _, w := range ws {
			if !contains(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}

// postgres returns the query as websearch_to_tsquery's text (words,
// phrases and their glossary's forms and spellings, any of them) and
// to_tsquery's (the prefixes, any of them).
func (q query) postgres() (web, prefix string) {
	var parts, pre []string
	for _, t := range q.terms {
		if t.prefix != "" {
			pre = append(pre, t.prefix+":*")
			continue
		}
		if t.quoted {
			continue
		}
		parts = append(parts, t.alternatives(false)...)
	}
	for _, p := range q.phrases {
		parts = append(parts, `"`+p+`"`)
	}
	return strings.Join(parts, " or "), strings.Join(pre, " | ")
}

// sqlite returns the query in FTS5's syntax: every term's forms and
// spellings and every phrase an FTS5 string, any of them.
func (q query) sqlite() string {
	var parts []string
	for _, t := range q.terms {
		if t.prefix != "" {
			parts = append(parts, `"`+t.prefix+`"*`)
			continue
		}
		if t.quoted {
			continue
		}
		for _, a := range t.alternatives(false) {
			parts = append(parts, `"`+a+`"`)
		}
	}
	for _, p := range q.phrases {
		parts = append(parts, `"`+p+`"`)
	}
	return strings.Join(parts, " OR ")
}

// postgresTerms returns q's terms, each once, as to_tsquery's texts, for
// the count of searchPostgresSQL: a term's forms and spellings, any of
// them (a form of several words all of them), or its prefix (word:*).
func (q query) postgresTerms() []string {
	out := make([]string, 0, len(q.terms))
	for _, t := range q.terms {
		if t.prefix != "" {
			out = append(out, t.prefix+":*")
			continue
		}
		out = append(out, strings.Join(t.alternatives(true), " | "))
	}
	return out
}

// coverage returns the share of the query's terms found in texts. Both
// engines' results are judged by it alike, whatever their scores.
func (q query) coverage(texts ...string) float64 {
	return q.coverageIn(stemSet(texts...))
}

// coverageIn returns the share of the query's terms found in set, stems:
// coverage of the texts whose stems set holds. It never falls when set
// grows.
func (q query) coverageIn(set map[string]bool) float64 {
	found := 0
	for _, t := range q.terms {
		if t.in(set) {
			found++
		}
	}
	return share(found, len(q.terms))
}

// share is found of n terms as a share, 0 to 1 (0 of none).
func share(found, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(found) / float64(n)
}

// hasPrefix reports whether a stem of set starts with the stem of p, or
// with p.
func hasPrefix(set map[string]bool, p string) bool {
	st := stem(p)
	for w := range set {
		if prefixes(w, p, st) {
			return true
		}
	}
	return false
}

// prefixes reports whether the stem w starts with p or with p's stem st.
func prefixes(w, p, st string) bool {
	return strings.HasPrefix(w, st) || strings.HasPrefix(w, p)
}
