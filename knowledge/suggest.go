package knowledge

import (
	"context"
	"fmt"
	"math"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Thresholds of a look-up before a question is asked. A question needs
// MinTerms words (common words left out) in the sentences that ask to be
// looked up; judge says, for each earlier shared answer the index or the
// engine finds, whether it answers the question (the question is then held
// back), is related to it (shown with the question, which is asked) or
// neither.
const (
	MinTerms = 2
	// maxSuggestions is how many earlier answers a look-up holds a
	// question back with.
	maxSuggestions = 3
	// lookCandidates is how many earlier answers a look-up reads and
	// judges, at most.
	lookCandidates = 12
)

// MinCoverage is the share of a question's terms (in the sentences that
// ask) that an earlier shared answer must hold to be held back with it;
// it must hold its earlier question's terms too (see README).
const MinCoverage = heldForward

// maxQuestionLen is inbox's bound of a question, in characters.
const maxQuestionLen = 20000

// Found is what a look-up found for a question.
type Found struct {
	// Held are the earlier answers that answer the question, best first:
	// it is not asked.
	Held []*Answer
	// Related are earlier answers close to the question, best first,
	// when none answers it: it is asked, and they are shown with it.
	Related []*Answer
}

// Suggest returns the shared answers of c's org that answer question well
// enough to hold it back before asking anyone (Held, best first, at most
// three), or else those close to it to show when it is asked (Related, at
// most three); none when the org shares no answers or the question is too
// short to judge (or not a valid question: Ask says why). It judges the
// sentences that ask (judge); the rest of the text is context, which may
// lift a match, never sink one. It reads only shared answers, so nothing
// between two other people shows. The replica's index of the org's answers
// (lookUp) picks those that may be offered, which alone are read; an org
// too big to index is searched by the engine.
//
// Returns only the database's errors.
func (s *Service) Suggest(ctx context.Context, c ctalk.Caller, question string) (Found, error) {
	text, err := ctalk.Text("question", question, maxQuestionLen, true)
	if err != nil {
		// Not a valid question: Ask says why.
		return Found{}, nil
	}
	if x := s.index.held(c.OrgID); x != nil && !x.searched {
		// The answers the index this replica holds picks are read with
		// the org's version, in one statement: when the index is current,
		// the look-up took that one round trip.
		lq := x.look(text)
		if ids := x.best(lq, lookCandidates); len(ids) > 0 && lq.asked.size() >= MinTerms {
			found, version, err := s.read(ctx, c.OrgID, ids)
			if err != nil {
				return Found{}, fmt.Errorf("look up shared answers: %w", err)
			}
			if version == x.version {
				return s.judged(lq, found), nil
			}
		}
	}
	lq, ids, searched, err := s.lookUp(ctx, c.OrgID, text, lookCandidates)
	if err != nil {
		return Found{}, err
	}
	if lq.asked.size() < MinTerms {
		// A question of common words only, or of one word, is for the
		// person asked to judge.
		return Found{}, nil
	}
	var found []*Answer
	switch {
	case searched:
		found, err = s.search(ctx, c.OrgID, lq.asked, lookCandidates, minMatched(lq.asked))
	case len(ids) > 0:
		found, _, err = s.read(ctx, c.OrgID, ids)
	}
	if err != nil {
		return Found{}, fmt.Errorf("look up shared answers: %w", err)
	}
	return s.judged(lq, found), nil
}

// judged is what judge says of each of found for lq: those held back with,
// or else those related, best first, three at most.
func (s *Service) judged(lq lookQuery, found []*Answer) Found {
	out, now := Found{Held: []*Answer{}, Related: []*Answer{}}, s.db.Now()
	for _, a := range found {
		a.markStale(now)
		j := judge(lq, a)
		a.Coverage, a.Score = j.forward, j.score()
		if owns(a.AnswererOwnership, lq.asked) {
			a.Score *= ownershipBoost
		}
		switch j.verdict {
		case same:
			out.Held = append(out.Held, a)
		case related:
			out.Related = append(out.Related, a)
		}
	}
	byScore(out.Held)
	byScore(out.Related)
	if len(out.Held) > 0 {
		out.Related = out.Related[:0]
	}
	out.Held, out.Related = out.Held[:min(maxSuggestions, len(out.Held))], out.Related[:min(maxRelated, len(out.Related))]
	return out
}

// readSQL reads up to lookCandidates shared answers of org $1 by id, an
// unused id given as the empty string, with the version of the org's
// shared answers that they are (the same statement sees both): one text,
// prepared once, whose plan is the primary key's whatever the ids. The
// answerer and the org's settings join as in the search, so that no
// answer shows while the org's knowledge_sharing is off.
var readSQL = `SELECT ` + answerColumns + `, o.knowledge_stale_days,
		(SELECT c.version FROM shared_answer_counts c WHERE c.org_id = s.org_id) FROM shared_answers s
	JOIN users u ON u.org_id = s.org_id AND u.id = s.answerer_id
	JOIN orgs o ON o.id = s.org_id AND o.knowledge_sharing <> 'off'
	WHERE s.org_id = $1 AND s.question_id IN (` + db.Placeholders(2, lookCandidates) + `)`

// read returns the shared answers ids of orgID, at most lookCandidates,
// and the version of the org's shared answers they are (-1 when none is
// found).
func (s *Service) read(ctx context.Context, orgID string, ids []string) ([]*Answer, int64, error) {
	args := make([]any, 1+lookCandidates)
	args[0] = orgID
	for i := range args[1:] {
		args[1+i] = ""
		if i < len(ids) {
			args[1+i] = ids[i]
		}
	}
	rows, err := s.db.Query(ctx, readSQL, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out, version := []*Answer{}, int64(-1)
	for rows.Next() {
		var staleDays int
		a, err := scanAnswer(rows, &staleDays, &version)
		if err != nil {
			return nil, 0, err
		}
		a.staleDays = staleDays
		out = append(out, a)
	}
	return out, version, rows.Err()
}

// minMatched is how many of q's terms an answer must hold for the engine
// to rank it in a look-up: two fewer than the relatedForward share of
// them (one for a typo that judge may forgive, one for a word the engine's
// stemmer or stop words judge a little differently), so that answers
// sharing only a word or two with a long question are never ranked, read
// or judged. 0 (no bound) for a short question.
func minMatched(q query) int {
	return max(0, int(math.Ceil(relatedForward*float64(q.size())-1e-9))-2)
}
