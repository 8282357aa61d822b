package inbox

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// What a person does in the web app with the questions sent to them: read
// them with their context and every draft their agent proposed, then
// approve, edit, reject or decline, or answer themselves. Reading changes
// nothing: a question counts as handed to the person's agent only when the
// agent's own tools fetch it.

// Review is a question sent to a person, with the context to decide on it
// and the drafts of its answer.
type Review struct {
	*InboxItem
	// Drafts are versions of the answer, newest first: the newest
	// ListedDrafts in a page of Pending, up to ReviewDrafts in Review.
	Drafts []*Draft
	// DraftCount is how many versions there are in all.
	DraftCount int
}

// Latest is the newest draft, or nil.
func (r *Review) Latest() *Draft {
	if len(r.Drafts) == 0 {
		return nil
	}
	return r.Drafts[0]
}

// How many drafts of each question a person is shown.
const (
	ListedDrafts = 5
	ReviewDrafts = 100
)

// Pending returns the questions waiting for the caller's answer, oldest first,
// a page at a time, with sender, history and their newest drafts. Unlike
// Inbox it marks nothing: the person looking does not take questions away
// from their agent. cursor is the previous page's next, or empty.
//
// Returns EInvalid for a cursor this server did not issue.
func (s *Service) Pending(ctx context.Context, c ctalk.Caller, limit int, cursor string) (out []*Review, next string, err error) {
	after, err := decodeCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	qs, err := queryQuestions(ctx, s.db, inboxPageSQL, c.OrgID, c.UserID, after.At, after.ID, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("read pending questions: %w", err)
	}
	if len(qs) > limit {
		qs = qs[:limit]
		last := qs[len(qs)-1]
		next = encodeCursor(pageCursor{At: last.CreatedAt, ID: last.ID})
	}
	out, err = s.reviews(ctx, c.OrgID, c.UserID, qs, ListedDrafts)
	return out, next, err
}

// Review returns one question sent to the caller, whatever its status, with its
// context and newest ReviewDrafts drafts.
//
// Returns EInvalid, ENotFound (also to its asker: it is not in their inbox).
func (s *Service) Review(ctx context.Context, c ctalk.Caller, msgID string) (*Review, error) {
	q, err := question(ctx, s.db, c.OrgID, c.UserID, msgID)
	if err != nil {
		return nil, err
	}
	if q.To != c.UserID {
		return nil, ctalk.Errorf(ctalk.ENotFound, "message %s is not among the questions sent to you", q.ID)
	}
	rs, err := s.reviews(ctx, c.OrgID, c.UserID, []*Question{q}, ReviewDrafts)
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// reviews adds context and up to perQuestion drafts to questions sent to
// userID, in a fixed number of statements.
func (s *Service) reviews(ctx context.Context, orgID, userID string, qs []*Question, perQuestion int) ([]*Review, error) {
	items, err := s.withHistory(ctx, s.db, orgID, userID, qs)
	if err != nil || len(items) == 0 {
		return []*Review{}, err
	}
	drafts, counts, err := recentDrafts(ctx, s.db, orgID, ids(qs), perQuestion)
	if err != nil {
		return nil, err
	}
	out := make([]*Review, len(items))
	for i, it := range items {
		out[i] = &Review{InboxItem: it, Drafts: drafts[it.ID], DraftCount: counts[it.ID]}
	}
	return out, nil
}

// recentDrafts returns the newest perQuestion drafts of each question,
// newest first, and how many each has, by question id.
func recentDrafts(ctx context.Context, r db.Reader, orgID string, questionIDs []string, perQuestion int) (map[string][]*Draft, map[string]int, error) {
	args := []any{orgID, perQuestion}
	for _, id := range questionIDs {
		args = append(args, id)
	}
	rows, err := r.Query(ctx, recentDraftsSQL(len(questionIDs)), args...)
	if err != nil {
		return nil, nil, fmt.Errorf("read drafts: %w", err)
	}
	defer rows.Close()
	drafts, counts := map[string][]*Draft{}, map[string]int{}
	for rows.Next() {
		var n int
		d, err := scanDraft(scanWith(rows, &n))
		if err != nil {
			return nil, nil, fmt.Errorf("read drafts: %w", err)
		}
		drafts[d.MessageID] = append(drafts[d.MessageID], d)
		counts[d.MessageID] = n
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read drafts: %w", err)
	}
	return drafts, counts, nil
}

// scanWith is r, whose Scan also fills extra after the columns it is given.
func scanWith(r interface{ Scan(...any) error }, extra ...any) interface{ Scan(...any) error } {
	return scanFunc(func(dest ...any) error { return r.Scan(append(dest, extra...)...) })
}

type scanFunc func(...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }

// Approve records that the caller approves version of their answer to msgID:
// their agent may send exactly its text. Only the latest version of a
// pending question can be approved; approving a rejected version takes the
// rejection back.
//
// Returns EInvalid, ENotFound, EForbidden, EConflict.
func (s *Service) Approve(ctx context.Context, c ctalk.Caller, msgID string, version int) (*Draft, error) {
	return s.onLatest(ctx, c.OrgID, c.UserID, msgID, version, "approve a draft of", func(tx db.Querier, d *Draft) (*Draft, error) {
		if _, err := tx.Exec(ctx, approveDraftSQL, s.db.Now(), c.OrgID, d.MessageID, d.Version); err != nil {
			return nil, fmt.Errorf("approve draft: %w", err)
		}
		d.Approved, d.Rejected, d.Note = true, false, ""
		return d, nil
	})
}

// Reject records that the caller rejects version of their answer to msgID,
// with a note their agent reads in check_inbox and in send_response's
// refusal. Only the latest version of a pending question can be rejected;
// rejecting an approved version takes the approval back.
//
// Returns EInvalid, ENotFound, EForbidden, EConflict.
func (s *Service) Reject(ctx context.Context, c ctalk.Caller, msgID string, version int, note string) (*Draft, error) {
	note, err := ctalk.Text("note", note, MaxReasonLen, false)
	if err != nil {
		return nil, err
	}
	return s.onLatest(ctx, c.OrgID, c.UserID, msgID, version, "reject a draft of", func(tx db.Querier, d *Draft) (*Draft, error) {
		stored := sql.NullString{String: note, Valid: note != ""}
		if _, err := tx.Exec(ctx, rejectDraftSQL, s.db.Now(), c.OrgID, d.MessageID, d.Version, stored); err != nil {
			return nil, fmt.Errorf("reject draft: %w", err)
		}
		d.Approved, d.Rejected, d.Note = false, true, note
		return d, nil
	})
}

// Edit stores text, the caller's edit of version of their answer to msgID, as
// the next version, approved as they wrote it; text equal to version's
// approves version. Only the latest version of a pending question can be
// edited, so that an edit never hides a draft proposed meanwhile.
//
// Returns EInvalid, ENotFound, EForbidden, EConflict.
func (s *Service) Edit(ctx context.Context, c ctalk.Caller, msgID string, version int, text string) (*Draft, error) {
	text, err := ctalk.Text("text", text, MaxAnswerLen, true)
	if err != nil {
		return nil, err
	}
	return s.onLatest(ctx, c.OrgID, c.UserID, msgID, version, "edit a draft of", func(tx db.Querier, d *Draft) (*Draft, error) {
		if text != d.Text {
			return s.addDraft(ctx, tx, c.OrgID, d.MessageID, text, true)
		}
		if _, err := tx.Exec(ctx, approveDraftSQL, s.db.Now(), c.OrgID, d.MessageID, d.Version); err != nil {
			return nil, fmt.Errorf("approve draft: %w", err)
		}
		d.Approved, d.Rejected, d.Note = true, false, ""
		return d, nil
	})
}

// onLatest runs fn, for action, on version of the answer to msgID when it
// is the latest draft of a question pending for userID, holding the
// question (see questionForUpdate) so that no proposal, send or other
// decision on it runs in between.
func (s *Service) onLatest(ctx context.Context, orgID, userID, msgID string, version int, action string, fn func(db.Querier, *Draft) (*Draft, error)) (out *Draft, err error) {
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		q, err := s.pendingForRecipient(ctx, tx, orgID, userID, msgID, action)
		if err != nil {
			return err
		}
		d, err := latestDraft(ctx, tx, orgID, q.ID)
		if err != nil {
			return err
		}
		if err := requireLatest(q.ID, d, version); err != nil {
			return err
		}
		out, err = fn(tx, d)
		return err
	})
	if err != nil {
		return nil, err
	}
	// The person's other open pages show the decision.
	s.changed(orgID, userID)
	return out, nil
}

// requireLatest refuses a version that is not latest, the newest draft of
// question id.
func requireLatest(id string, latest *Draft, version int) error {
	if latest == nil || version < 1 || version > latest.Version {
		return ctalk.Errorf(ctalk.ENotFound, "message %s has no draft version %d; reload the question to see its drafts", id, version)
	}
	if version < latest.Version {
		return ctalk.Errorf(ctalk.EConflict, "draft version %d of message %s is no longer the latest: version %d was written since; read it and decide on that one", version, id, latest.Version)
	}
	return nil
}

// AnswerDirectly sends text, written by the caller, as the answer to a question
// sent to them, with no agent involved: it is stored as their own approved
// version, the question is answered and the asker's agent woken. Of two
// concurrent answers (this and an agent's send), exactly one is sent.
//
// Returns EInvalid, ENotFound, EForbidden, EConflict.
func (s *Service) AnswerDirectly(ctx context.Context, c ctalk.Caller, msgID, text string) (*Question, error) {
	text, err := ctalk.Text("answer", text, MaxAnswerLen, true)
	if err != nil {
		return nil, err
	}
	var q *Question
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		var err error
		if q, err = s.pendingForRecipient(ctx, tx, c.OrgID, c.UserID, msgID, "answer"); err != nil {
			return err
		}
		if err := requireInfo(q); err != nil {
			return err
		}
		if _, err := s.addDraft(ctx, tx, c.OrgID, q.ID, text, true); err != nil {
			return err
		}
		return s.resolve(ctx, tx, c.OrgID, q, StatusAnswered, text)
	})
	if err != nil {
		return nil, err
	}
	// The person's open pages stop counting it as waiting.
	s.changed(c.OrgID, q.To, q.From)
	return q, nil
}
