package knowledge

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/orgs"
)

// ownershipBoost multiplies the score of an answer whose answerer owns an
// area the query names: the owner's word on their own area counts more.
const ownershipBoost = 1.5

// candidates is how many matches each engine ranks per result asked for,
// before the ownership boost reorders them in Go.
const candidates = 4

// searchPostgresSQL ranks the matches of the query by ts_rank_cd over the
// weighted tsvector (question A 1.0, answer B 0.4), normalized by the
// document's length (1: divided by 1 + the log of its length). The query
// is written inline, so that the planner sees a constant and uses the GIN
// index; the matches are found and ranked first, apart (MATERIALIZED), so
// that no join with users makes the planner scan them once per member.
// With $6 > 0, only matches holding at least $6 of the single terms $5
// (to_tsquery's text, a word or a prefix:*) are ranked: a look-up that
// needs most of the question's words ranks none of the answers that share
// a word or two with it.
const searchPostgresSQL = `WITH t AS MATERIALIZED (SELECT to_tsquery('english', w) AS q FROM unnest($5::text[]) w),
	m AS MATERIALIZED (
		SELECT s.*, ts_rank_cd('{0.1, 0.2, 0.4, 1.0}', s.search, websearch_to_tsquery('english', $2) || to_tsquery('english', $3), 1) AS score
		FROM shared_answers s
		WHERE s.org_id = $1 AND s.search @@ (websearch_to_tsquery('english', $2) || to_tsquery('english', $3))
		  AND ($6 <= 0 OR (SELECT COUNT(*) FROM t WHERE s.search @@ t.q) >= $6)
		ORDER BY score DESC, s.answered_at DESC LIMIT $4)
	SELECT ` + answerColumns + `, s.score, o.knowledge_stale_days FROM m s JOIN users u ON u.org_id = s.org_id AND u.id = s.answerer_id
	JOIN orgs o ON o.id = s.org_id AND o.knowledge_sharing <> 'off'
	ORDER BY 11 DESC, s.answered_at DESC`

// searchSQLiteSQL ranks the matches of the FTS5 query $2 by bm25 (the
// question weighing 2.5 times the answer), negated so that higher is better
// as on Postgres. CROSS JOIN keeps the FTS5 table the outer loop: the
// matches first, then their rows, not every row of the org probed.
const searchSQLiteSQL = `SELECT ` + answerColumns + `, -bm25(shared_answers_fts, 2.5, 1.0), o.knowledge_stale_days
	FROM shared_answers_fts f CROSS JOIN shared_answers s ON s.rowid = f.rowid
	     JOIN users u ON u.org_id = s.org_id AND u.id = s.answerer_id
	     JOIN orgs o ON o.id = s.org_id AND o.knowledge_sharing <> 'off'
	WHERE shared_answers_fts MATCH $2 AND s.org_id = $1
	ORDER BY 11 DESC, s.answered_at DESC LIMIT $4`

// answerColumns are an Answer's columns, for scanAnswer. The answerer's
// name and ownership come from users, and the org's knowledge settings
// from orgs, inside the search's single statement (reads of orgs' tables
// in a join, never a write), so that a look-up is one round trip.
const answerColumns = `s.question_id, s.question, s.answer, s.asker_id, s.answerer_id, u.name, u.ownership, s.answered_at, s.updated_at, s.edited_by`

func scanAnswer(r interface{ Scan(...any) error }, extra ...any) (*Answer, error) {
	a := &Answer{}
	var own, editedBy string
	if err := r.Scan(append([]any{&a.MessageID, &a.Question, &a.Answer, &a.AskerID, &a.AnswererID, &a.AnswererName, &own, &a.AnsweredAt, &a.UpdatedAt, &editedBy}, extra...)...); err != nil {
		return nil, err
	}
	a.AnswererOwnership = orgs.DecodeOwnership(own)
	if editedBy != a.AnswererID {
		a.EditedBy = editedBy
	}
	return a, nil
}

// Search returns the shared answers of c's org that match text, best
// first, at most limit (DefaultLimit when 0): the question and answer
// matched by the engine's full-text search with English stems, "quoted
// phrases" and word* prefixes, any word counting and more of them ranking
// higher, the question weighing more than the answer, and the answers of
// someone owning an area the query names raised. A term of the org's
// glossary finds what it stands for too, and a British spelling the
// American one, and the other way. Nothing but shared
// answers, nothing of another org, and nothing while the org's
// knowledge_sharing is off.
//
// Returns EInvalid.
func (s *Service) Search(ctx context.Context, c ctalk.Caller, text string, limit int) ([]*Answer, error) {
	q, limit, err := parseSearch("query", text, limit)
	if err != nil {
		return nil, err
	}
	// The org's glossary, as the look-up reads it.
	x, err := s.orgIndex(ctx, c.OrgID)
	if err != nil {
		return nil, fmt.Errorf("search shared answers: %w", err)
	}
	if x != nil {
		q = q.withGlossary(x.glossary)
	}
	out, err := s.search(ctx, c.OrgID, q, limit*candidates, 0)
	if err != nil {
		return nil, fmt.Errorf("search shared answers: %w", err)
	}
	rank(out, q, s.db.Now())
	return out[:min(limit, len(out))], nil
}

// recentSQL reads the shared answers of org $1 most recently shared or
// edited first, at most $2, joined as the search's are.
const recentSQL = `SELECT ` + answerColumns + `, o.knowledge_stale_days FROM shared_answers s
	JOIN users u ON u.org_id = s.org_id AND u.id = s.answerer_id
	JOIN orgs o ON o.id = s.org_id AND o.knowledge_sharing <> 'off'
	WHERE s.org_id = $1
	ORDER BY s.updated_at DESC, s.question_id DESC LIMIT $2`

// Recent returns the shared answers of c's org most recently shared or
// edited first, at most limit (DefaultLimit when 0, at most MaxLimit):
// what the Knowledge page shows before anyone searches. Nothing of
// another org, and nothing while the org's knowledge_sharing is off.
//
// Returns EInvalid for a limit out of range.
func (s *Service) Recent(ctx context.Context, c ctalk.Caller, limit int) ([]*Answer, error) {
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 1 || limit > MaxLimit {
		return nil, ctalk.Errorf(ctalk.EInvalid, "limit is %d; give 1 to %d", limit, MaxLimit)
	}
	rows, err := s.db.Query(ctx, recentSQL, c.OrgID, limit)
	if err != nil {
		return nil, fmt.Errorf("read recent shared answers: %w", err)
	}
	defer rows.Close()
	out, now := []*Answer{}, s.db.Now()
	for rows.Next() {
		var staleDays int
		a, err := scanAnswer(rows, &staleDays)
		if err != nil {
			return nil, fmt.Errorf("read recent shared answers: %w", err)
		}
		a.staleDays = staleDays
		a.markStale(now)
		out = append(out, a)
	}
	return out, rows.Err()
}

// search runs q on the engine, at most n matches; on Postgres each holding
// at least minTerms of q's single terms (none asked for when 0).
func (s *Service) search(ctx context.Context, orgID string, q query, n, minTerms int) ([]*Answer, error) {
	var rows *db.Rows
	var err error
	if s.db.Engine == db.SQLite {
		// FTS5 counts no terms cheaply: a count by separate term queries
		// cost more than ranking every match (BENCHMARKS.md), so minTerms
		// bounds only Postgres's ranking.
		rows, err = s.db.Query(ctx, searchSQLiteSQL, orgID, q.sqlite(), "", n)
	} else {
		web, prefix := q.postgres()
		// Planned for its words on every run (db.PlanEachRun): a generic
		// plan scans every answer for any word.
		rows, err = s.db.Query(ctx, searchPostgresSQL, s.db.PlanEachRun(orgID, web, prefix, n, q.postgresTerms(), minTerms)...)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var a0 Answer
	out := []*Answer{}
	for rows.Next() {
		a, err := scanAnswer(rows, &a0.Score, &a0.staleDays)
		if err != nil {
			return nil, err
		}
		a.Score, a.staleDays = a0.Score, a0.staleDays
		out = append(out, a)
	}
	return out, rows.Err()
}

// rank applies what both engines share, in Go: the coverage and the
// ownership boost, the stale mark; then orders answers by score, newest first
// among equals.
func rank(answers []*Answer, q query, now time.Time) {
	for _, a := range answers {
		a.Coverage = q.coverage(a.Question, a.Answer)
		// The engines rank a word of the question above several of the
		// answer; an answer holding more of the query's words is the
		// better one whichever they are.
		a.Score *= 1 + a.Coverage
		if owns(a.AnswererOwnership, q) {
			a.Score *= ownershipBoost
		}
		a.markStale(now)
	}
	byScore(answers)
}

// markStale sets a's stale mark: older than its org's
// knowledge_stale_days at now.
func (a *Answer) markStale(now time.Time) {
	a.Stale = a.staleDays > 0 && a.UpdatedAt.Before(now.Add(-time.Duration(a.staleDays)*24*time.Hour))
}

// byScore orders answers by score, newest first among equals.
func byScore(answers []*Answer) {
	slices.SortStableFunc(answers, func(x, y *Answer) int {
		switch {
		case x.Score != y.Score:
			if x.Score > y.Score {
				return -1
			}
			return 1
		default:
			return y.AnsweredAt.Compare(x.AnsweredAt)
		}
	})
}

// owns reports whether one of the ownership tags matches the query: a tag
// whose words all appear in the query, or that starts with a prefix of it.
func owns(tags []string, q query) bool {
	words := stemSet(append(append([]string{}, q.words...), q.phrases...)...)
	for _, tag := range tags {
		tw := terms(tag)
		all := len(tw) > 0
		for _, w := range tw {
			all = all && words[stem(w)]
		}
		if all {
			return true
		}
		for _, p := range q.prefixes {
			if len(tw) > 0 && hasPrefix(stemSet(tag), p) {
				return true
			}
		}
	}
	return false
}
