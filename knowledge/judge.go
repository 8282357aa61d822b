package knowledge

import (
	"maps"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The look-up's judgement of whether an earlier shared answer answers a
// new question: on the question the text asks, not its wrapping, and on
// evidence both ways, calibrated on the tuning part of
// testdata/eval.json and reported on its held-out part (BENCHMARKS.md).
const (
	// heldForward is the share of the question's terms that an earlier
	// question and answer must hold to hold the question back (all: a
	// word of it that they lack, "logs" in "access to the staging
	// cluster logs", is another question), and heldBack the share of the
	// earlier question's terms that the new text must hold. Besides, a
	// word of the question that only the earlier answer holds, while a
	// word of the earlier question is missing from the text, is another
	// verb or object (restore for back up).
	heldForward = 1.0
	heldBack    = 0.75
	// relatedForward is the share of the question's terms, at least
	// two, that an earlier question and answer must hold to be shown as
	// related when the question is asked.
	relatedForward = 0.5
	// relatedBoth is what the shares both ways must add up to for a
	// related answer: half the question in it, and some of its question
	// in the text.
	relatedBoth = 1.0
	// maxRelated is how many related answers an ask returns.
	maxRelated = 3
)

// verdict is the judgement of one earlier answer.
type verdict int

const (
	unrelated verdict = iota
	related
	same
)

// lookQuery is a question as the look-up judges it: the terms of the
// sentences that ask (asked), and the stems of the whole text, whose
// context may lift a match but never sinks one.
type lookQuery struct {
	asked query
	all   map[string]bool
	// content are the stems of the text's words that are not stop
	// words, each once.
	content []string
	// kind is the question word of the sentences that ask, when it is
	// who, when, where, why or how.
	kind string
	g    *glossary
	// unknown are the question's words that no answer of the org's
	// index holds, the only ones judge may read as typos; nil when the
	// engine searched, when any may be.
	unknown map[string]bool
}

// newLookQuery reads text as a question, with g's synonyms.
func newLookQuery(text string, g *glossary) lookQuery {
	part := questionPart(text)
	q := splitQuery(part).withGlossary(g)
	if len(q.terms) < MinTerms {
		// A question of one word ("Any idea?") after its context: the
		// whole text is the question.
		part, q = text, splitQuery(text).withGlossary(g)
	}
	return lookQuery{asked: q, all: stemSet(text), content: contentStems(text), kind: questionKind(part), g: g}
}

// judgement is what judge found of one earlier answer.
type judgement struct {
	verdict verdict
	// forward is the share of the question's terms in the earlier
	// question and answer; inQuestion of them in the earlier question;
	// back the share of the earlier question's terms in the new text.
	forward, inQuestion, back float64
}

// score orders judged answers: more of the question in them, and more of
// them in the question.
func (j judgement) score() float64 {
	return j.forward + j.back + j.inQuestion/2
}

// judge judges whether a answers lq.
func judge(lq lookQuery, a *Answer) judgement {
	qSet := stemSet(a.Question)
	aSet := maps.Clone(qSet)
	addStems(aSet, a.Answer)
	terms := lq.asked.terms
	found, inQ, typos := 0, 0, 0
	for _, t := range terms {
		switch {
		case t.in(aSet):
			found++
		case typos == 0 && lq.mayBeTypo(t) && typoIn(t, aSet):
			found, typos = found+1, 1
		}
		if t.in(qSet) || lq.mayBeTypo(t) && typoIn(t, qSet) {
			inQ++
		}
	}
	earlier := termsOf(contentWords(a.Question), lq.g)
	back := 0
	for _, t := range earlier {
		if t.in(lq.all) || longWord(t) && typoIn(t, lq.all) {
			back++
		}
	}
	j := judgement{forward: share(found, len(terms)), inQuestion: share(inQ, len(terms)), back: share(back, len(earlier))}
	// A word of the question that the earlier question lacks, while a
	// word of the earlier question is not in the text: another verb or
	// object, even when the earlier answer mentions it.
	substituted := inQ < len(terms) && back < len(earlier)
	clash := lq.kind != "" && questionKind(a.Question) != "" && lq.kind != questionKind(a.Question)
	switch {
	case len(terms) >= MinTerms && j.forward >= heldForward-1e-9 && j.back >= heldBack && !substituted && !clash:
		j.verdict = same
	case found >= MinTerms && j.forward >= relatedForward && j.forward+j.back >= relatedBoth:
		j.verdict = related
	}
	return j
}

// mayBeTypo reports whether judge may read t as a typo: one word of five
// letters or more, which no answer holds.
func (lq lookQuery) mayBeTypo(t term) bool {
	return longWord(t) && (lq.unknown == nil || lq.unknown[t.forms[0].stems[0]])
}

// longWord reports whether t is one word of five letters or more.
func longWord(t term) bool {
	return t.prefix == "" && len(t.forms) == 1 && len(t.forms[0].stems) == 1 && utf8.RuneCountInString(t.forms[0].words[0]) >= 5
}

// typoIn reports whether t, a word that mayBeTypo, is one edit
// (a letter added, left out, changed, or two swapped) from a stem of set
// of four letters or more: "databse" for "database".
func typoIn(t term, set map[string]bool) bool {
	w := t.forms[0].stems[0]
	for st := range set {
		if len(st) >= 4 && oneEdit(w, st) {
			return true
		}
	}
	return false
}

// oneEdit reports whether a and b differ by one edit, as typoIn counts.
func oneEdit(a, b string) bool {
	if a == b || len(a)-len(b) > 1 || len(b)-len(a) > 1 {
		return false
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	switch {
	case len(a) == len(b):
		return a[i+1:] == b[i+1:] || i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	case len(a) > len(b):
		return a[i+1:] == b[i:]
	default:
		return a[i:] == b[i+1:]
	}
}

// questionMarks start a line that the asker marks as the question.
var questionMarks = []string{"question:", "q:"}

// questionPart returns the sentences of text that ask: the lines the asker
// marked ("Question: ..."), else the sentences ending with a question mark,
// else those starting with a question word; the whole text when none does.
func questionPart(text string) string {
	var marked []string
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(line)
		for _, m := range questionMarks {
			if len(l) > len(m) && strings.EqualFold(l[:len(m)], m) {
				marked = append(marked, l[len(m):])
			}
		}
	}
	if len(marked) > 0 {
		return strings.Join(marked, "\n")
	}
	sentences := splitSentences(text)
	if len(sentences) < 2 {
		return text
	}
	var asking, starting []string
	for _, s := range sentences {
		switch {
		case strings.HasSuffix(s, "?"):
			asking = append(asking, s)
		case startsQuestion(s):
			starting = append(starting, s)
		}
	}
	switch {
	case len(asking) > 0:
		return strings.Join(asking, " ")
	case len(starting) > 0:
		return strings.Join(starting, " ")
	}
	return text
}

// splitSentences splits text after each '.', '!' or '?' followed by a
// space, and at line ends.
func splitSentences(text string) []string {
	var out []string
	start := 0
	add := func(end int) {
		if s := strings.TrimSpace(text[start:end]); s != "" {
			out = append(out, s)
		}
		start = end
	}
	for i, r := range text {
		switch {
		case r == '\n':
			add(i)
		case r == '.' || r == '!' || r == '?':
			if next, _ := utf8.DecodeRuneInString(text[i+1:]); i+1 == len(text) || unicode.IsSpace(next) {
				add(i + 1)
			}
		}
	}
	add(len(text))
	return out
}

// questionWords start a sentence that asks.
var questionWords = map[string]bool{"how": true, "what": true, "who": true, "whom": true, "whose": true, "where": true,
	"when": true, "why": true, "which": true, "is": true, "are": true, "was": true, "were": true, "do": true, "does": true,
	"did": true, "can": true, "could": true, "should": true, "would": true, "will": true, "has": true, "have": true, "any": true}

// startsQuestion reports whether sentence s starts with a question word.
func startsQuestion(s string) bool {
	ws := rawWords(s)
	return len(ws) > 0 && questionWords[ws[0]]
}

// kinds are the question words that ask for one kind of thing: a person,
// a time, a place, a reason, a way. Two questions asking for different
// ones are different questions, whatever their other words ("Who rotates
// the keys?", "How do we rotate the keys?"); what, which and the rest
// may ask for any.
var kinds = map[string]string{"who": "who", "whom": "who", "whose": "who", "when": "when", "where": "where", "why": "why", "how": "how"}

// questionKind returns the kind of thing the question s asks for (see
// kinds), by the first word of each of its sentences, or "" when it names
// none or several.
func questionKind(s string) string {
	kind := ""
	for _, sentence := range splitSentences(s) {
		ws := rawWords(sentence)
		if len(ws) == 0 {
			continue
		}
		if k := kinds[ws[0]]; k != "" && k != kind {
			if kind != "" {
				return ""
			}
			kind = k
		}
	}
	return kind
}
