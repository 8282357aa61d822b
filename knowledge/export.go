package knowledge

import (
	"context"
	"time"

	"github.com/ctalk/ctalk/db"
)

// ExportedAnswer is one line of an export's shared_answers.jsonl: an
// answer its answerer shared with the organization, as it reads now.
type ExportedAnswer struct {
	QuestionID string    `json:"question_id"`
	AskerID    string    `json:"asker_id"`
	AnswererID string    `json:"answerer_id"`
	Question   string    `json:"question"`
	Answer     string    `json:"answer"`
	AnsweredAt time.Time `json:"answered_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	EditedBy   string    `json:"edited_by,omitempty"`
}

// ExportedTerm is one line of an export's glossary.jsonl.
type ExportedTerm struct {
	Term      string    `json:"term"`
	Means     string    `json:"means"`
	UpdatedBy string    `json:"updated_by"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ExportAnswers calls emit with each shared answer of orgID by question,
// as rows are read; when userID is not empty, only those the user asked
// or answered.
//
// Returns only the database's errors, or emit's.
func (s *Service) ExportAnswers(ctx context.Context, orgID, userID string, emit func(any) error) error {
	return db.Each(ctx, s.db, func(rows *db.Rows) error {
		var a ExportedAnswer
		if err := rows.Scan(&a.QuestionID, &a.AskerID, &a.AnswererID, &a.Question, &a.Answer, &a.AnsweredAt, &a.UpdatedAt, &a.EditedBy); err != nil {
			return err
		}
		return emit(&a)
	}, `SELECT question_id, asker_id, answerer_id, question, answer, answered_at, updated_at, edited_by
		FROM shared_answers WHERE org_id = $1 AND ($2 = '' OR asker_id = $2 OR answerer_id = $2) ORDER BY question_id`, orgID, userID)
}

// ExportGlossary calls emit with each term of orgID's glossary.
//
// Returns only the database's errors, or emit's.
func (s *Service) ExportGlossary(ctx context.Context, orgID string, emit func(any) error) error {
	return db.Each(ctx, s.db, func(rows *db.Rows) error {
		var t ExportedTerm
		if err := rows.Scan(&t.Term, &t.Means, &t.UpdatedBy, &t.UpdatedAt); err != nil {
			return err
		}
		return emit(&t)
	}, `SELECT term, means, updated_by, updated_at FROM knowledge_glossary WHERE org_id = $1 ORDER BY term`, orgID)
}
