package knowledge

import (
	"context"
	"fmt"
	"math"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Thresholds of a suggestion, the look-up ask_person makes before a
// question is asked. An earlier shared answer is offered instead of asking
// when its question and answer hold at least MinCoverage of the new
// question's words (after common words are left out) and the question has
// at least MinTerms of them. The engines' scores are not comparable (ts_rank_cd
// against bm25) and grow with the length of what they rank; the share of the
// asker's own words that an earlier answer contains means the same on both,
// and at 0.6 every rephrased question of the search-quality corpus finds its
// answer while none of its unrelated questions is held back (see
// testdata/corpus.json).
const (
	MinCoverage = 0.6
	MinTerms    = 2
	// maxSuggestions is how many earlier answers a look-up offers.
	maxSuggestions = 3
)

// maxQuestionLen is inbox's bound of a question, in characters.
const maxQuestionLen = 20000

// Suggest returns the shared answers of c's org that answer question well
// enough to show before asking anyone, best first, at most three; none when
// the org shares no answers or the question is too short to judge (or not
// a valid question: Ask says why). It reads only shared answers, so nothing
// between two other people shows. The replica's index of the org's answers
// (lookUp) picks those holding MinCoverage of the question's words, which
// alone are read; an org too big to index is searched by the engine.
//
// Returns only the database's errors.
func (s *Service) Suggest(ctx context.Context, c ctalk.Caller, question string) ([]*Answer, error) {
	q, err := parseQuery("question", question, maxQuestionLen)
	if ctalk.ErrorCode(err) == ctalk.EInvalid {
		// A question of common words only, or none, is for the person
		// asked to judge (or for Ask to refuse).
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if q.size() < MinTerms {
		return nil, nil
	}
	ids, searched, err := s.lookUp(ctx, c.OrgID, q, maxSuggestions*candidates)
	var found []*Answer
	switch {
	case err != nil:
		return nil, err
	case searched:
		found, err = s.search(ctx, c.OrgID, q, maxSuggestions*candidates, minMatched(q))
	case len(ids) > 0:
		found, err = s.read(ctx, c.OrgID, q, ids)
	}
	if err != nil {
		return nil, fmt.Errorf("look up shared answers: %w", err)
	}
	rank(found, q, s.db.Now())
	out := []*Answer{}
	for _, a := range found {
		if a.Coverage >= MinCoverage && len(out) < maxSuggestions {
			out = append(out, a)
		}
	}
	return out, nil
}

// readSQL reads up to maxSuggestions*candidates shared answers of org $1 by
// id, an unused id given as the empty string: one text, prepared once, whose plan is the
// primary key's whatever the ids. The answerer and the org's settings join
// as in the search, so that no answer shows while the org's
// knowledge_sharing is off.
var readSQL = `SELECT ` + answerColumns + `, o.knowledge_stale_days FROM shared_answers s
	JOIN users u ON u.org_id = s.org_id AND u.id = s.answerer_id
	JOIN orgs o ON o.id = s.org_id AND o.knowledge_sharing <> 'off'
	WHERE s.org_id = $1 AND s.question_id IN (` + db.Placeholders(2, maxSuggestions*candidates) + `)`

// read returns the shared answers ids of orgID, at most
// maxSuggestions*candidates, scored for rank as the look-up weighs them:
// lookBase of the share of q's terms in their question.
func (s *Service) read(ctx context.Context, orgID string, q query, ids []string) ([]*Answer, error) {
	args := make([]any, 1+maxSuggestions*candidates)
	args[0] = orgID
	for i := range args[1:] {
		args[1+i] = ""
		if i < len(ids) {
			args[1+i] = ids[i]
		}
	}
	rows, err := s.db.Query(ctx, readSQL, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*Answer{}
	for rows.Next() {
		var staleDays int
		a, err := scanAnswer(rows, &staleDays)
		if err != nil {
			return nil, err
		}
		a.staleDays, a.Score = staleDays, lookBase(q.coverage(a.Question))
		out = append(out, a)
	}
	return out, rows.Err()
}

// lookBase is the score that rank raises by coverage and ownership in a
// look-up, which has no engine's score: the question's words weigh more
// than the answer's, as in both engines' ranking. A look-up's index orders
// answers by the same product, before ownership.
func lookBase(questionCoverage float64) float64 {
	return 1 + questionCoverage
}

// minMatched is how many of q's single terms an answer must hold for the
// engine to rank it in a look-up: one fewer than MinCoverage of them, as
// coverage counts them, so that an answer the engine's stemmer or stop
// words judge a little differently from coverage's is still ranked. Answers
// sharing only a word or two with a long question are then never ranked,
// read or judged. 0 (no bound) for a short question.
func minMatched(q query) int {
	return int(math.Ceil(MinCoverage*float64(q.size())-1e-9)) - 1
}
