package inbox

import (
	"context"
	"database/sql"
	"time"

	"github.com/ctalk/ctalk/db"
)

// ExportedQuestion is one line of an export's questions.jsonl: a question
// with its answer (Resolution) and thread, never its idempotency key.
type ExportedQuestion struct {
	ID              string     `json:"question_id"`
	AskerID         string     `json:"asker_id"`
	RecipientID     string     `json:"recipient_id"`
	Body            string     `json:"body"`
	Status          string     `json:"status"`
	Resolution      string     `json:"resolution,omitempty"`
	ThreadID        string     `json:"thread_id,omitempty"`
	FollowUpOf      string     `json:"follow_up_of,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	ResolvedAt      *time.Time `json:"resolved_at,omitempty"`
	InfoRequestedAt *time.Time `json:"info_requested_at,omitempty"`
}

// ExportedDraft is one line of an export's drafts.jsonl: every version of
// an answer drafted for a question, with the decision on it, never the
// hash of its approval link.
type ExportedDraft struct {
	QuestionID    string     `json:"question_id"`
	Version       int        `json:"version"`
	Body          string     `json:"body"`
	ByPerson      bool       `json:"by_person"`
	CreatedAt     time.Time  `json:"created_at"`
	ApprovedAt    *time.Time `json:"approved_at,omitempty"`
	RejectedAt    *time.Time `json:"rejected_at,omitempty"`
	RejectionNote string     `json:"rejection_note,omitempty"`
}

// ExportedEvent is one line of an export's question_events.jsonl: a step
// of a question's way (forwarded, information requested or provided).
type ExportedEvent struct {
	QuestionID string    `json:"question_id"`
	Seq        int       `json:"seq"`
	Kind       string    `json:"kind"`
	ActorID    string    `json:"actor_id"`
	TargetID   string    `json:"target_id,omitempty"`
	Body       string    `json:"body,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// ExportQuestions calls emit with each question of orgID by id, as rows
// are read; when userID is not empty, only those the user asked or was
// asked.
//
// Returns only the database's errors, or emit's.
func (s *Service) ExportQuestions(ctx context.Context, orgID, userID string, emit func(any) error) error {
	return db.Each(ctx, s.db, func(rows *db.Rows) error {
		var q ExportedQuestion
		var resolution, thread, followUp sql.NullString
		var resolved, info db.NullTime
		if err := rows.Scan(&q.ID, &q.AskerID, &q.RecipientID, &q.Body, &q.Status, &resolution, &thread, &followUp,
			&q.CreatedAt, &resolved, &info); err != nil {
			return err
		}
		q.Resolution, q.ThreadID, q.FollowUpOf = resolution.String, thread.String, followUp.String
		q.ResolvedAt, q.InfoRequestedAt = resolved.Ptr(), info.Ptr()
		return emit(&q)
	}, `SELECT id, asker_id, recipient_id, body, status, resolution, thread_id, follow_up_of,
		created_at, resolved_at, info_requested_at FROM questions
		WHERE org_id = $1 AND ($2 = '' OR asker_id = $2 OR recipient_id = $2) ORDER BY id`, orgID, userID)
}

// ExportDrafts calls emit with each draft of orgID's questions, by
// question and version; when userID is not empty, only the drafts of the
// questions the user was asked: an asker sees the answer sent, not the
// drafts before it.
//
// Returns only the database's errors, or emit's.
func (s *Service) ExportDrafts(ctx context.Context, orgID, userID string, emit func(any) error) error {
	return db.Each(ctx, s.db, func(rows *db.Rows) error {
		var d ExportedDraft
		var approved, rejected db.NullTime
		var note sql.NullString
		if err := rows.Scan(&d.QuestionID, &d.Version, &d.Body, &d.ByPerson, &d.CreatedAt, &approved, &rejected, &note); err != nil {
			return err
		}
		d.ApprovedAt, d.RejectedAt, d.RejectionNote = approved.Ptr(), rejected.Ptr(), note.String
		return emit(&d)
	}, `SELECT d.question_id, d.version, d.body, d.by_person, d.created_at, d.approved_at,
		d.rejected_at, d.rejection_note FROM drafts d
		WHERE d.org_id = $1 AND ($2 = '' OR EXISTS (SELECT 1 FROM questions q
			WHERE q.org_id = d.org_id AND q.id = d.question_id AND q.recipient_id = $2))
		ORDER BY d.question_id, d.version`, orgID, userID)
}

// ExportEvents calls emit with each step of the way of orgID's questions,
// by question and step; when userID is not empty, only the steps the user
// took or that were addressed to them.
//
// Returns only the database's errors, or emit's.
func (s *Service) ExportEvents(ctx context.Context, orgID, userID string, emit func(any) error) error {
	return db.Each(ctx, s.db, func(rows *db.Rows) error {
		var e ExportedEvent
		if err := rows.Scan(&e.QuestionID, &e.Seq, &e.Kind, &e.ActorID, &e.TargetID, &e.Body, &e.CreatedAt); err != nil {
			return err
		}
		return emit(&e)
	}, `SELECT question_id, seq, kind, actor_id, target_id, body, created_at FROM question_events
		WHERE org_id = $1 AND ($2 = '' OR actor_id = $2 OR target_id = $2) ORDER BY question_id, seq`, orgID, userID)
}
