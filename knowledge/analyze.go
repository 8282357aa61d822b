package knowledge

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
)

// The analysis of text that every comparison of words in Go shares: the
// look-up's judgement, its index, coverage, ownership and the terms sent to
// the engines. Words are lower-case runs of letters and digits; an
// apostrophe, straight or curly, ends a contraction or a possessive, whose
// first part alone is kept ("who's" is "who", "team's" is "team",
// "doesn't" is "does"); British spellings are read as American ones
// ("colour" is "color"); and a word is compared by its Snowball English
// stem, the stemmer of Postgres's english configuration.

// words returns the words of s, lower-case, contractions and possessives
// cut to their first part, British spellings made American.
func words(s string) []string {
	var out []string
	for _, w := range rawWords(s) {
		out = append(out, american(w))
	}
	return out
}

// rawWords returns the words of s as words does, in their own spelling.
func rawWords(s string) []string {
	var out []string
	start := -1
	flush := func(end int) {
		if start >= 0 {
			out = appendWord(out, strings.ToLower(s[start:end]))
			start = -1
		}
	}
	for i, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if start < 0 {
				start = i
			}
		case isApostrophe(r) && start >= 0:
			// Kept inside the word, for appendWord to judge.
			if i+utf8.RuneLen(r) < len(s) {
				next, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):])
				if unicode.IsLetter(next) {
					continue
				}
			}
			flush(i)
		default:
			flush(i)
		}
	}
	flush(len(s))
	return out
}

// isApostrophe reports whether r is an apostrophe or a closing single
// quote, as people type them.
func isApostrophe(r rune) bool {
	return r == '\'' || r == '’' || r == '‘' || r == 'ʼ' || r == '′'
}

// contractions are the ends after an apostrophe that make a contraction or
// a possessive; any other apostrophe splits two words (o'clock).
var contractions = map[string]bool{"s": true, "t": true, "re": true, "ve": true, "ll": true, "d": true, "m": true}

// negations are the contractions with not whose first part is not the
// verb's spelling.
var negations = map[string]string{"can": "can", "won": "will", "shan": "shall", "ain": "is"}

// appendWord appends the word or words of w, which may hold apostrophes,
// to out.
func appendWord(out []string, w string) []string {
	for w != "" {
		i := strings.IndexFunc(w, isApostrophe)
		if i < 0 {
			return append(out, w)
		}
		head, rest := w[:i], w[i:]
		_, size := utf8.DecodeRuneInString(rest)
		rest = rest[size:]
		end := rest
		if j := strings.IndexFunc(rest, isApostrophe); j >= 0 {
			end = rest[:j]
		}
		if !contractions[end] {
			out = append(out, head)
			w = rest
			continue
		}
		if end == "t" {
			if v, ok := negations[head]; ok {
				head = v
			} else if strings.HasSuffix(head, "n") {
				head = head[:len(head)-1]
			}
		}
		out = append(out, head)
		// What follows the contraction's end, if anything, is another
		// word ("o'clock's").
		w = strings.TrimLeftFunc(rest[len(end):], isApostrophe)
	}
	return out
}

// britishRoots are the starts of British spellings and their American
// ones; a word starting with one is compared as the American word.
var britishRoots = map[string]string{
	"colour": "color", "flavour": "flavor", "favour": "favor", "behaviour": "behavior", "honour": "honor",
	"labour": "labor", "neighbour": "neighbor", "humour": "humor", "rumour": "rumor", "harbour": "harbor",
	"vapour": "vapor", "armour": "armor", "endeavour": "endeavor", "savour": "savor",
	"centre": "center", "metre": "meter", "litre": "liter", "theatre": "theater", "fibre": "fiber", "calibre": "caliber",
	"licence": "license", "defence": "defense", "offence": "offense", "pretence": "pretense",
	"catalogue": "catalog", "dialogue": "dialog", "analogue": "analog", "programme": "program", "grey": "gray",
	"aluminium": "aluminum", "judgement": "judgment", "acknowledgement": "acknowledgment", "ageing": "aging",
	"sceptic": "skeptic", "enrolment": "enrollment", "fulfil": "fulfill", "instalment": "installment",
	"travelled": "traveled", "travelling": "traveling", "cancelled": "canceled", "cancelling": "canceling",
	"labelled": "labeled", "labelling": "labeling", "modelled": "modeled", "modelling": "modeling",
	"signalled": "signaled", "signalling": "signaling", "fuelled": "fueled", "levelled": "leveled",
	"marshalled": "marshaled", "marshalling": "marshaling", "totalled": "totaled", "counsellor": "counselor",
	"tonne": "ton", "mould": "mold", "plough": "plow", "manoeuvre": "maneuver", "paediatric": "pediatric",
	"oestrogen": "estrogen", "anaesthe": "anesthe", "encyclopaedia": "encyclopedia", "draught": "draft",
	"analys": "analyz", "paralys": "paralyz", "catalys": "catalyz",
}

func init() {
	// The -ise verbs, their -isation nouns and -iser agents.
	for _, root := range strings.Fields(`organis recognis authoris prioritis optimis customis normalis serialis
		deserialis initialis synchronis finalis minimis maximis summaris utilis apologis realis standardis categoris
		centralis decentralis visualis sanitis tokenis containeris virtualis localis memoris specialis emphasis
		criticis capitalis digitis mobilis monetis personalis parameteris randomis stabilis modernis legalis
		harmonis globalis neutralis privatis rationalis symbolis sympathis vandalis reorganis unauthoris
		authoris amortis anonymis pseudonymis characteris generalis internationalis itemis jeopardis
		materialis moisturis penalis publicis scrutinis socialis terroris trivialis vaporis verbalis`) {
		britishRoots[root] = strings.TrimSuffix(root, "is") + "iz"
	}
	for b, a := range britishRoots {
		americanRoots[a] = b
		rootStarts[b[:min(4, len(b))]], rootStarts[a[:min(4, len(a))]] = true, true
	}
}

// americanRoots are britishRoots the other way, for the engines, which
// compare stored words as they are spelled.
var americanRoots = map[string]string{}

// american returns w spelled as in American English, when britishRoots
// knows its start.
func american(w string) string {
	return respell(w, britishRoots)
}

// british returns w spelled as in British English, when americanRoots
// knows its start; w when it does not.
func british(w string) string {
	return respell(w, americanRoots)
}

// rootStarts are the first four bytes of every root of britishRoots and
// americanRoots: a word starting otherwise is spelled alike in both.
var rootStarts = map[string]bool{}

// respell replaces the longest start of w that roots holds.
func respell(w string, roots map[string]string) string {
	if len(w) < 4 || !rootStarts[w[:4]] {
		return w
	}
	for n := min(len(w), 16); n >= 4; n-- {
		if to, ok := roots[w[:n]]; ok {
			return to + w[n:]
		}
	}
	return w
}

// spellings returns the ways w may be spelled in stored text: w, and its
// American and British spellings when they differ.
func spellings(w string) []string {
	out := []string{w}
	for _, v := range []string{american(w), british(american(w))} {
		if !contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func contains(ws []string, w string) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

// stopWords are left out of searches and of every comparison of words:
// they match nearly every answer and say nothing of its subject (Postgres's
// english configuration drops most of them too; SQLite's FTS5 keeps every
// word, so ctalk drops them for it). Besides the usual function words:
// modal verbs, what frames a question ("what's the way to", "is there a
// process for"), greetings and thanks, which say how something is asked,
// not what; and the verbs of "how does X work", "how is X handled",
// "where do I find X", which ask of X whatever their verb.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about above after again against all also am an and any are aren as at be
		because been before being below between both but by can cannot could did do does doing done down during
		each else etc ever every few for from further get gets getting got had has have having he her here hers
		herself him himself his how i if in into is it its itself just let lets me more most my myself no nor not
		now of off on once only or other otherwise our ours ourselves out over own per please same she should so
		some such than that the their theirs them themselves then there these they this those through thus to too
		under until up upon us very via was we were what whatever when whenever where wherever whether which while
		who whom whose why will with would yet you your yours yourself yourselves
		must might may shall ought need needs needed
		anyone anybody someone somebody everyone everybody anything something everything nothing thing things
		know knows tell use used using uses way ways
		hi hey hello thanks thank thx cheers pls plz sorry
		question questions wondering wonder curious quick quickly idea ideas
		like want wants wanted trying try tried able
		actually currently really basically still already
		steps procedure process often frequently usually
		find work works handle handled happen happens`) {
		stopWords[w] = true
	}
}

// stems caches stem by word: Snowball's stemmer takes microseconds a word,
// and an org's answers use a vocabulary of a few thousand words.
var stems struct {
	sync.RWMutex
	m map[string]string
}

// maxCachedStems bounds the cache of stems; it is emptied when full.
const maxCachedStems = 1 << 16

// stemExceptions are words whose Snowball stem is not their short
// word's: "added" is "ad" to Snowball, while "add" stays "add".
var stemExceptions = map[string]string{"added": "add", "adding": "add"}

// stem returns the Snowball English stem of the word w (as words returns
// it): "retries" meets "retry" and "migrations" meets "migrate", as on
// Postgres.
func stem(w string) string {
	stems.RLock()
	st, ok := stems.m[w]
	stems.RUnlock()
	if ok {
		return st
	}
	env := snowballstem.NewEnv(w)
	english.Stem(env)
	st = env.Current()
	if irregular, ok := stemExceptions[w]; ok {
		st = irregular
	}
	stems.Lock()
	if stems.m == nil || len(stems.m) >= maxCachedStems {
		stems.m = map[string]string{}
	}
	// The word may be a slice of a long text: copied, so that the cache
	// holds no text.
	stems.m[strings.Clone(w)] = st
	stems.Unlock()
	return st
}

// stemSet returns the stems of every word of texts.
func stemSet(texts ...string) map[string]bool {
	out := map[string]bool{}
	addStems(out, texts...)
	return out
}

// addStems adds the stems of every word of texts to set.
func addStems(set map[string]bool, texts ...string) {
	for _, t := range texts {
		for _, w := range words(t) {
			set[stem(w)] = true
		}
	}
}

// contentStems returns the stems of the words of s that are not stop
// words, each once, in order.
func contentStems(s string) []string {
	var out []string
	for _, w := range words(s) {
		if stopWords[w] {
			continue
		}
		if st := stem(w); !contains(out, st) {
			out = append(out, st)
		}
	}
	return out
}
