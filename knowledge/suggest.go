package knowledge

import (
	"context"
	"fmt"
	"math"

	"github.com/ctalk/ctalk"
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
// between two other people shows. It searches only when the words of the
// org's shared answers together could reach MinCoverage (mayOffer).
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
	if may, err := s.mayOffer(ctx, c.OrgID, q); err != nil || !may {
		return nil, err
	}
	found, err := s.search(ctx, c.OrgID, q, maxSuggestions*candidates, minMatched(q))
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

// minMatched is how many of q's single terms an answer must hold for the
// engine to rank it in a look-up: one fewer than MinCoverage of them, as
// coverage counts them, so that an answer the engine's stemmer or stop
// words judge a little differently from coverage's is still ranked. Answers
// sharing only a word or two with a long question are then never ranked,
// read or judged. 0 (no bound) for a short question.
func minMatched(q query) int {
	return int(math.Ceil(MinCoverage*float64(q.size())-1e-9)) - 1
}
