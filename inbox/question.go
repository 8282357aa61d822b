package inbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// scanQuestion scans the questionColumns of a row, then its extra columns
// into extra.
func scanQuestion(r interface{ Scan(...any) error }, extra ...any) (*Question, error) {
	q := &Question{}
	var resolved, infoRequested db.NullTime
	var resolution, thread, followUp sql.NullString
	if err := r.Scan(append([]any{&q.ID, &q.From, &q.To, &q.Text, &q.Status, &q.CreatedAt, &resolved, &resolution, &q.idempotency,
		&thread, &followUp, &infoRequested, &q.steps}, extra...)...); err != nil {
		return nil, err
	}
	q.CreatedAt = q.CreatedAt.UTC()
	q.ThreadID, q.FollowUpOf = thread.String, followUp.String
	if q.Status == StatusPending && infoRequested.Valid {
		q.Status = StatusNeedsInfo
	}
	if resolved.Valid {
		t := resolved.Time
		q.ResolvedAt = &t
	}
	switch q.Status {
	case StatusAnswered:
		q.Answer, q.ResolvedBy = resolution.String, q.To
	case StatusDeclined:
		q.Reason, q.ResolvedBy = resolution.String, q.To
	case StatusWithdrawn:
		q.ResolvedBy = q.From
	}
	return q, nil
}

func queryQuestions(ctx context.Context, q db.Reader, query string, args ...any) ([]*Question, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*Question{}
	for rows.Next() {
		qq, err := scanQuestion(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, qq)
	}
	return out, rows.Err()
}

func byKey(ctx context.Context, q db.Reader, orgID, askerID, key string) (*Question, error) {
	qq, err := scanQuestion(q.QueryRow(ctx, questionByKeySQL, orgID, askerID, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read question by idempotency key: %w", err)
	}
	return qq, nil
}

// question loads a question that userID takes part in. Anyone else, in this
// org or another, gets "not found".
func question(ctx context.Context, q db.Reader, orgID, userID, id string) (*Question, error) {
	return loadQuestion(ctx, q, orgID, userID, id, "")
}

// questionForUpdate is question inside a transaction that then writes for
// the question: on Postgres it locks the question's row until commit, so
// that such transactions on one question take turns, and each reads, after
// the lock, what the one before it committed (the versions of its drafts).
// SQLite has one writer at a time anyway and no FOR UPDATE.
func (s *Service) questionForUpdate(ctx context.Context, tx db.Querier, orgID, userID, id string) (*Question, error) {
	lock := ""
	if s.db.Engine == db.Postgres {
		lock = " FOR UPDATE"
	}
	return loadQuestion(ctx, tx, orgID, userID, id, lock)
}

func loadQuestion(ctx context.Context, q db.Reader, orgID, userID, id, lock string) (*Question, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return nil, ctalk.Errorf(ctalk.EInvalid, "message_id is required; check_inbox and check_replies show message ids")
	}
	if !IsMessageID(id) {
		return nil, notFoundQuestion(id)
	}
	qq, err := scanQuestion(q.QueryRow(ctx, questionSQL+lock, orgID, id, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFoundQuestion(id)
	}
	if err != nil {
		return nil, fmt.Errorf("read question: %w", err)
	}
	return qq, nil
}

// messageIDPrefix starts every message id; newID adds 24 hex digits.
const messageIDPrefix = "q_"

// IsMessageID reports whether id has the shape of a message id, so that no
// other string reaches a query, an error message or the audit log.
func IsMessageID(id string) bool {
	if len(id) != len(messageIDPrefix)+24 || !strings.HasPrefix(id, messageIDPrefix) {
		return false
	}
	for _, r := range id[len(messageIDPrefix):] {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// notFoundQuestion quotes id only when it has the shape of a message id:
// anything else may be a secret given in the wrong argument.
func notFoundQuestion(id string) error {
	if !IsMessageID(id) {
		return ctalk.Errorf(ctalk.ENotFound, "message_id is not one of your message ids (they look like q_ and 24 hex digits); check_inbox and check_replies show them")
	}
	return ctalk.Errorf(ctalk.ENotFound, "message %q not found among your questions; check_inbox and check_replies show your message ids", id)
}

// requirePending refuses a question that no longer waits (pending or
// needing information).
func requirePending(q *Question) error {
	if q.open() {
		return nil
	}
	return ctalk.Errorf(ctalk.EConflict, "message %s is already %s; nothing more can be sent for it", q.ID, q.Status)
}

// requireRecipient refuses anyone but the recipient.
func requireRecipient(q *Question, userID, action string) error {
	if q.To == userID {
		return nil
	}
	return ctalk.Errorf(ctalk.EForbidden, "only %s, to whom message %s was sent, may %s it; you asked it", q.To, q.ID, action)
}
