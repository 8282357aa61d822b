package knowledge

import (
	"strings"
	"unicode"

	"github.com/ctalk/ctalk"
)

// query is a search parsed once for both engines: plain words, "quoted
// phrases" and word* prefixes, with English stop words dropped. Any term
// may match; answers matching more of them, and more closely, rank higher.
type query struct {
	words, phrases, prefixes []string
}

// stopWords are left out of searches: they match nearly every answer and
// say nothing of its subject (Postgres's english configuration drops them
// too; SQLite's FTS5 keeps every word, so ctalk drops them for it).
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about after all also am an and any are as at be been before being but by can
		could did do does doing done for from get gets got had has have having he her here hers him his how i if in
		into is it its just me more most my no nor not now of off on once only or other our ours out over own please
		same she should so some such than that the their theirs them then there these they this those through to too
		under until up very was we were what when where which while who whom why will with would you your yours
		anyone anybody someone somebody know tell does anything something thing things use used using way ways`) {
		stopWords[w] = true
	}
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
	var q query
	for i, part := range strings.Split(text, `"`) {
		if i%2 == 1 {
			if words := terms(part); len(words) > 1 {
				q.phrases = append(q.phrases, strings.Join(words, " "))
				continue
			}
		}
		for _, f := range strings.Fields(part) {
			prefix := strings.HasSuffix(f, "*")
			for _, w := range terms(f) {
				switch {
				case prefix && len([]rune(w)) >= 2:
					q.prefixes = append(q.prefixes, w)
				case !stopWords[w]:
					q.words = append(q.words, w)
				}
			}
		}
	}
	q.words, q.phrases = distinct(q.words, maxTerms), distinct(q.phrases, maxTerms/4)
	if len(q.words)+len(q.phrases)+len(q.prefixes) == 0 {
		return q, ctalk.Errorf(ctalk.EInvalid, "%s has no word to search for (common words such as \"how\" or \"the\" are left out); give the subject, e.g. \"retry logic\"", name)
	}
	return q, nil
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

// size is the number of distinct words, phrase words and prefixes of q.
func (q query) size() int {
	set := stemSet(append(append([]string{}, q.words...), q.phrases...)...)
	return len(set) + len(q.prefixes)
}

// terms splits s into lower-case words of letters and digits.
func terms(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// postgres returns the query as websearch_to_tsquery's text (words and
// phrases, any of them) and to_tsquery's (the prefixes, any of them).
func (q query) postgres() (web, prefix string) {
	parts := append([]string{}, q.words...)
	for _, p := range q.phrases {
		parts = append(parts, `"`+p+`"`)
	}
	pre := make([]string, len(q.prefixes))
	for i, p := range q.prefixes {
		pre[i] = p + ":*"
	}
	return strings.Join(parts, " or "), strings.Join(pre, " | ")
}

// sqlite returns the query in FTS5's syntax: every term an FTS5 string,
// any of them.
func (q query) sqlite() string {
	var parts []string
	for _, w := range append(append([]string{}, q.words...), q.phrases...) {
		parts = append(parts, `"`+w+`"`)
	}
	for _, p := range q.prefixes {
		parts = append(parts, `"`+p+`"*`)
	}
	return strings.Join(parts, " OR ")
}

// postgresTerms returns q's single terms, each once, as to_tsquery's
// texts, for the count of searchPostgresSQL: its words, its phrases' words
// and its prefixes (word:*).
func (q query) postgresTerms() []string {
	words := append([]string{}, q.words...)
	for _, p := range q.phrases {
		words = append(words, strings.Fields(p)...)
	}
	words = distinct(words, 2*maxTerms)
	for _, p := range q.prefixes {
		words = append(words, p+":*")
	}
	return words
}

// coverage returns the share of the query's terms found in texts: words
// and phrases' words by their crude stem, prefixes as the start of a word.
// Both engines' results are judged by it alike, whatever their scores.
func (q query) coverage(texts ...string) float64 {
	return q.coverageIn(stemSet(texts...))
}

// coverageIn returns the share of the query's terms found in set, crude
// stems: coverage of the texts whose stems set holds. It never falls when
// set grows.
func (q query) coverageIn(set map[string]bool) float64 {
	stems, prefixes := q.coverageTerms()
	found := 0
	for _, st := range stems {
		if set[st] {
			found++
		}
	}
	for _, p := range prefixes {
		if hasPrefix(set, p) {
			found++
		}
	}
	return share(found, len(stems)+len(prefixes))
}

// coverageTerms returns the terms that coverage counts: the crude stems of
// q's words and phrases' words, each once and no stop word, and q's
// prefixes.
func (q query) coverageTerms() (stems, prefixes []string) {
	words := append([]string{}, q.words...)
	for _, p := range q.phrases {
		words = append(words, strings.Fields(p)...)
	}
	seen := map[string]bool{}
	for _, w := range words {
		if st := stem(w); !seen[st] && !stopWords[w] {
			seen[st] = true
			stems = append(stems, st)
		}
	}
	return stems, q.prefixes
}

// share is found of n terms as a share, 0 to 1 (0 of none).
func share(found, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(found) / float64(n)
}

// stem is a crude English stem, the same on both engines: enough that
// "retries" meets "retry" and "migrations" meets "migrate" when ctalk
// compares words in Go. The engines' own stemmers do the searching.
func stem(w string) string {
	for _, s := range suffixes {
		if strings.HasSuffix(w, s.suffix) && len(w)-len(s.suffix) >= 3 {
			w = strings.TrimSuffix(w, s.suffix) + s.with
			break
		}
	}
	// The first six letters, cut without copying.
	n := 0
	for i := range w {
		if n == 6 {
			return w[:i]
		}
		n++
	}
	return w
}

// suffixes are what stem takes off a word, the first that fits, and what
// it puts in their place.
var suffixes = []struct{ suffix, with string }{{"ies", "y"}, {"ing", ""}, {"ed", ""}, {"es", ""}, {"s", ""}}

// stemSet returns the crude stems of every word of texts.
func stemSet(texts ...string) map[string]bool {
	out := map[string]bool{}
	addStems(out, texts...)
	return out
}

// addStems adds the crude stems of every word of texts to set.
func addStems(set map[string]bool, texts ...string) {
	for _, t := range texts {
		for _, w := range terms(t) {
			set[stem(w)] = true
		}
	}
}

// hasPrefix reports whether a word of set starts with the crude stem of
// p, or with p.
func hasPrefix(set map[string]bool, p string) bool {
	st := stem(p)
	for w := range set {
		if prefixes(w, p, st) {
			return true
		}
	}
	return false
}

// prefixes reports whether the crude stem w starts with p or with p's
// crude stem st.
func prefixes(w, p, st string) bool {
	return strings.HasPrefix(w, st) || strings.HasPrefix(w, p)
}
