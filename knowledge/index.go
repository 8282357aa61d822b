package knowledge

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/ctalk/ctalk/db"
)

// Bounds of the index of shared answers that a replica keeps for
// ask_person's look-up.
const (
	// maxIndexAnswers is the most shared answers of an org that are
	// indexed: a bigger org is searched by the engine on every look-up, as
	// reading all its answers again after each change would cost more
	// than the searches it spares (BENCHMARKS.md).
	maxIndexAnswers = 2000
	// indexBudget bounds the estimated bytes of every org's index of one
	// replica together; an org's index that would take more than a quarter
	// of it is not kept, and the org is searched.
	indexBudget = 64 << 20
	// indexReadTimeout bounds the read of an org's answers, which the
	// look-ups waiting for it share.
	indexReadTimeout = 30 * time.Second
)

// inQuestion marks a posting whose stem is in the answer's question, not
// only in its answer.
const inQuestion = 1

// orgIndex is, for each of an org's shared answers, the crude stems of
// its question and answer as coverage compares them, at a version of the
// org's row of shared_answer_counts: a posting list of answers per stem.
// Never changed once made, so shared between look-ups. An org too big to
// index has no postings and searched set.
type orgIndex struct {
	version  int64
	searched bool
	// glossary is the org's glossary at version.
	glossary *glossary
	ids      []string
	answered []int64
	// questionTerms is, per answer, how many stems of content words its
	// question has.
	questionTerms []uint16
	// postings[stem] are answer<<1 | inQuestion, answers ascending.
	postings map[string][]uint32
	bytes    int
}

// index holds orgIndex by org, within indexBudget.
type index struct {
	mu    sync.Mutex
	orgs  map[string]*orgIndex
	bytes int
	// reads is one read of an org's answers at a version for all the
	// look-ups that need it at once: after a share, every ask of the org
	// would otherwise read them all again.
	reads singleflight.Group
}

// lookUp returns what a look-up of text in orgID must read: the ids of
// the answers it may offer, the likeliest first (orgIndex.best), at most n,
// with the question as judge reads it (orgIndex.look); searched when the
// org is too big to index and the engine must search it instead. It reads
// the org's row of shared_answer_counts, and its answers' words and
// glossary only when they changed since this replica last read them:
// every share, edit and unshare, and every change of the glossary, on any
// replica, moves the row's version on in its own transaction, so that an
// index read at an older version is never trusted.
func (s *Service) lookUp(ctx context.Context, orgID, text string, n int) (lq lookQuery, ids []string, searched bool, err error) {
	x, err := s.orgIndex(ctx, orgID)
	if err != nil || x == nil {
		return newLookQuery(text, nil), nil, false, err
	}
	lq = x.look(text)
	if x.searched {
		return lq, nil, true, nil
	}
	return lq, x.best(lq, n), false, nil
}

// look returns text as judge reads it with x's glossary, knowing which of
// its words no answer of x holds.
func (x *orgIndex) look(text string) lookQuery {
	lq := newLookQuery(text, x.glossary)
	if x.searched {
		return lq
	}
	lq.unknown = map[string]bool{}
	for _, t := range lq.asked.terms {
		if len(t.forms) == 1 && len(t.forms[0].stems) == 1 && len(x.postings[t.forms[0].stems[0]]) == 0 {
			lq.unknown[t.forms[0].stems[0]] = true
		}
	}
	return lq
}

// held returns orgID's index as this replica holds it, which a change on
// another replica may have made stale; nil when it holds none.
func (c *index) held(orgID string) *orgIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.orgs[orgID]
}

// orgIndex returns the replica's index of orgID's shared answers at the
// version of its row of shared_answer_counts (see lookUp): nil when the
// org shares no answers, without postings but with its glossary (searched)
// when it shares more than a replica indexes.
func (s *Service) orgIndex(ctx context.Context, orgID string) (*orgIndex, error) {
	var answers int
	var version int64
	err := s.db.QueryRow(ctx, `SELECT answers, version FROM shared_answer_counts WHERE org_id = $1`, orgID).Scan(&answers, &version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// Nothing was ever shared there, nor a glossary written.
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read shared answer counts: %w", err)
	}
	return s.index.org(ctx, s.db, orgID, version, answers > maxIndexAnswers)
}

// org returns orgID's index at version, read again unless this replica
// holds it at that version. The answers are read after the version, so
// they hold every change of it; an answer changed in between moved the
// version on, and the next look-up reads them again.
func (c *index) org(ctx context.Context, d *db.DB, orgID string, version int64, searched bool) (*orgIndex, error) {
	c.mu.Lock()
	x := c.orgs[orgID]
	c.mu.Unlock()
	if x != nil && x.version == version {
		return x, nil
	}
	read := c.reads.DoChan(orgID+"\x00"+strconv.FormatInt(version, 10), func() (any, error) {
		c.mu.Lock()
		x := c.orgs[orgID]
		c.mu.Unlock()
		if x != nil && x.version == version {
			// Read by a caller that finished just before.
			return x, nil
		}
		// Not the first caller's ctx, whose end would fail the others;
		// each caller stops waiting at its own.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), indexReadTimeout)
		defer cancel()
		x, err := readIndex(rctx, d, orgID, version, searched)
		if err != nil {
			return nil, err
		}
		c.keep(orgID, x)
		return x, nil
	})
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("index shared answers: %w", ctx.Err())
	case r := <-read:
		if r.Err != nil {
			return nil, fmt.Errorf("index shared answers: %w", r.Err)
		}
		return r.Val.(*orgIndex), nil
	}
}

// keep stores x as orgID's index unless a newer one is held, forgetting
// other orgs' until every index fits indexBudget.
func (c *index) keep(orgID string, x *orgIndex) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.orgs[orgID]
	if old != nil && old.version >= x.version {
		return
	}
	if old != nil {
		c.bytes -= old.bytes
		delete(c.orgs, orgID)
	}
	for other, o := range c.orgs {
		if c.bytes+x.bytes <= indexBudget {
			break
		}
		c.bytes -= o.bytes
		delete(c.orgs, other)
	}
	c.orgs[orgID], c.bytes = x, c.bytes+x.bytes
}

// readIndex reads the index of orgID's shared answers and its glossary,
// labelled version: searched, without postings, when asked to or once it
// outgrows a quarter of indexBudget.
func readIndex(ctx context.Context, d *db.DB, orgID string, version int64, searched bool) (*orgIndex, error) {
	entries, err := readGlossary(ctx, d, orgID)
	if err != nil {
		return nil, err
	}
	g := newGlossary(entries)
	if searched {
		return &orgIndex{version: version, searched: true, glossary: g, bytes: 64 + 200*len(entries)}, nil
	}
	rows, err := d.Query(ctx, `SELECT question_id, question, answer, answered_at FROM shared_answers WHERE org_id = $1 ORDER BY question_id`, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	x := &orgIndex{version: version, glossary: g, postings: map[string][]uint32{}, bytes: 200 * len(entries)}
	for rows.Next() {
		var id, question, answer string
		var at time.Time
		if err := rows.Scan(&id, &question, &answer, &at); err != nil {
			return nil, err
		}
		x.add(id, at, question, answer)
		if x.bytes > indexBudget/4 {
			return &orgIndex{version: version, searched: true, glossary: g, bytes: 64 + 200*len(entries)}, nil
		}
	}
	return x, rows.Err()
}

// add indexes one answer, after those added before it.
func (x *orgIndex) add(id string, at time.Time, question, answer string) {
	i := uint32(len(x.ids)) << 1
	x.ids, x.answered = append(x.ids, id), append(x.answered, at.UnixNano())
	inQ, content := map[string]bool{}, 0
	for _, w := range words(question) {
		st := stem(w)
		if !inQ[st] && !stopWords[w] {
			content++
		}
		inQ[st] = true
	}
	x.questionTerms = append(x.questionTerms, uint16(min(content, 1<<16-1)))
	x.bytes += len(id) + 26
	for st := range inQ {
		x.post(st, i|inQuestion)
	}
	for st := range stemSet(answer) {
		if !inQ[st] {
			x.post(st, i)
		}
	}
}

// post appends posting to the list of st.
func (x *orgIndex) post(st string, posting uint32) {
	p, ok := x.postings[st]
	if !ok {
		// The stem is a slice of its answer's text: copied, so that the
		// index holds no text.
		st = strings.Clone(st)
		x.bytes += len(st) + 56
	}
	grown := append(p, posting)
	x.bytes += 4 * (cap(grown) - cap(p))
	x.postings[st] = grown
}

// hits counts, per answer, the question's terms found in its question and
// answer (all) and the text's stems found in its question (back); term is
// the last term counted for it (from 1), so that a term with several
// forms or a prefix matching several stems counts once.
type hits struct{ all, back, term uint16 }

// best returns the ids of x's answers that the look-up may offer for lq,
// at most n, the likeliest first: those holding at least MinTerms of the
// question's terms and, with one more for a typo that judge may forgive
// when a word of the question is in no answer (lq.unknown), relatedForward
// of them, ordered by their share of the question's terms
// and of their question's terms in the text, then newest first.
func (x *orgIndex) best(lq lookQuery, n int) []string {
	q := lq.asked
	terms := len(q.terms)
	if terms == 0 || terms > 1<<16-1 {
		return nil
	}
	found := make([]hits, len(x.ids))
	var touched []uint32
	count := func(term int, ps []uint32) {
		for _, p := range ps {
			a := p >> 1
			h := &found[a]
			if h.term != uint16(term) {
				if h.term, h.all = uint16(term), h.all+1; h.all == 1 {
					touched = append(touched, a)
				}
			}
		}
	}
	for i, t := range q.terms {
		switch {
		case t.prefix != "":
			st := stem(t.prefix)
			for w, ps := range x.postings {
				if prefixes(w, t.prefix, st) {
					count(1+i, ps)
				}
			}
		default:
			for _, f := range t.forms {
				count(1+i, x.holding(f.stems))
			}
		}
	}
	typos := 0
	for _, t := range q.terms {
		if lq.mayBeTypo(t) {
			typos = 1
		}
	}
	for _, st := range lq.content {
		for _, p := range x.postings[st] {
			if p&inQuestion != 0 && found[p>>1].all > 0 {
				found[p>>1].back++
			}
		}
	}
	return x.top(found, touched, terms, typos, n)
}

// holding returns the postings of the answers holding every stem of sts,
// ascending.
func (x *orgIndex) holding(sts []string) []uint32 {
	if len(sts) == 1 {
		return x.postings[sts[0]]
	}
	var out []uint32
	for _, p := range x.postings[sts[0]] {
		all := true
		for _, st := range sts[1:] {
			_, ok := slices.BinarySearchFunc(x.postings[st], p>>1, func(q, a uint32) int { return cmp.Compare(q>>1, a) })
			all = all && ok
		}
		if all {
			out = append(out, p)
		}
	}
	return out
}

// top returns the ids of the n likeliest of the touched answers, as best
// orders them.
func (x *orgIndex) top(found []hits, touched []uint32, terms, typos, n int) []string {
	type scored struct {
		a     uint32
		score float64
	}
	var best []scored
	for _, a := range touched {
		h := found[a]
		if int(h.all) < MinTerms || share(int(h.all)+typos, terms) < relatedForward {
			continue
		}
		c := scored{a, share(int(h.all), terms) + share(int(h.back), int(x.questionTerms[a]))}
		at := len(best)
		for at > 0 && (best[at-1].score < c.score || best[at-1].score == c.score && x.answered[best[at-1].a] < x.answered[a]) {
			at--
		}
		if at < n {
			best = slices.Insert(best, at, c)[:min(n, len(best)+1)]
		}
	}
	ids := make([]string, len(best))
	for i, c := range best {
		ids[i] = x.ids[c.a]
	}
	return ids
}
