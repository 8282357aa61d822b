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

// Approve records the caller's approval of version of their answer to
// msgID and sends its text as the answer, in the same transaction: the
// asker is woken and notified as by Send, on every replica. Only the
// latest version of a pending question can be approved (approving a
// rejected version takes the rejection back). Approving the version whose
// text already answered the question (a second approval, or after the
// agent's send) sends nothing and reports Already; of concurrent decisions
// and sends, exactly one answer is sent.
//
// Given modes (see InMode), the approval is made only in one of them.
//
// Returns EInvalid, ENotFound, EForbidden (*ModeError among them),
// EConflict (a newer version was written, the question was resolved
// otherwise, or it waits for its asker's information).
func (s *Service) Approve(ctx context.Context, c ctalk.Caller, msgID string, version int, modes ...InMode) (*Sent, error) {
	return s.sendDecision(ctx, c, msgID, "approve a draft of", modes,
		func(q *Question, latest *Draft) (string, error) {
			if err := requireLatest(q.ID, latest, version); err != nil {
				return "", err
			}
			return latest.Text, nil
		},
		func(tx db.Querier, _ *Question, latest *Draft, _ string) (*Draft, error) {
			return s.approve(ctx, tx, c.OrgID, latest)
		})
}

// approve records the person's approval of d, taking back a rejection.
func (s *Service) approve(ctx context.Context, tx db.Querier, orgID string, d *Draft) (*Draft, error) {
	if _, err := tx.Exec(ctx, approveDraftSQL, s.db.Now(), orgID, d.MessageID, d.Version); err != nil {
		return nil, fmt.Errorf("approve draft: %w", err)
	}
	d.Approved, d.Rejected, d.Note = true, false, ""
	return d, nil
}

// Reject records that the caller rejects version of their answer to msgID,
// with a note their agent reads in check_inbox and in send_response's
// refusal. Only the latest version of a pending question can be rejected
// (rejecting a version approved before approving sent it takes the
// approval back); a question answered already is a conflict that quotes
// the answer sent.
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

// Edit stores text, the caller's edit of version of their answer to msgID,
// as the next version, approved as they wrote it, and sends it as the
// answer in the same transaction, as Approve does; text equal to version's
// approves and sends version. Only the latest version of a pending
// question can be edited, so that an edit never hides a draft proposed
// meanwhile. An edit whose text already answered the question sends
// nothing and reports Already. Given modes, it is made only in one of
// them, as Approve.
//
// Returns EInvalid, ENotFound, EForbidden, EConflict (as Approve).
func (s *Service) Edit(ctx context.Context, c ctalk.Caller, msgID string, version int, text string, modes ...InMode) (*Sent, error) {
	text, err := ctalk.Text("text", text, MaxAnswerLen, true)
	if err != nil {
		return nil, err
	}
	return s.sendDecision(ctx, c, msgID, "edit a draft of", modes,
		func(*Question, *Draft) (string, error) { return text, nil },
		func(tx db.Querier, q *Question, latest *Draft, text string) (*Draft, error) {
			if err := requireLatest(q.ID, latest, version); err != nil {
				return nil, err
			}
			if text != latest.Text {
				return s.addDraft(ctx, tx, c.OrgID, q.ID, text, true)
			}
			return s.approve(ctx, tx, c.OrgID, latest)
		})
}

// sendDecision sends, in one transaction, the answer that a decision of
// the caller, for action, makes on the question msgID sent to them,
// holding the question (see questionForUpdate) so that no proposal, send
// or other decision on it runs in between: modes, if any, are the approval
// modes the decision may be made in (see InMode); sends says, from the
// question and its latest draft, which text the decision sends, or why it
// may not; store records the decision and returns the version sent. A
// question already answered with that text is reported Already, and
// nothing is sent; one resolved otherwise is a conflict that says how.
func (s *Service) sendDecision(ctx context.Context, c ctalk.Caller, msgID, action string, modes []InMode,
	sends func(q *Question, latest *Draft) (string, error),
	store func(tx db.Querier, q *Question, latest *Draft, text string) (*Draft, error)) (*Sent, error) {
	var out *Sent
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		q, err := s.questionForUpdate(ctx, tx, c.OrgID, c.UserID, msgID)
		if err != nil {
			return err
		}
		if err := requireRecipient(q, c.UserID, action); err != nil {
			return err
		}
		if err := requireMode(ctx, tx, c.OrgID, q.ID, modes); err != nil {
			return err
		}
		latest, err := latestDraft(ctx, tx, c.OrgID, q.ID)
		if err != nil {
			return err
		}
		text, refused := sends(q, latest)
		if !q.open() {
			if refused == nil && q.Status == StatusAnswered && q.Answer == text {
				out = &Sent{Question: q, Draft: latest, Already: true}
				return nil
			}
			return resolvedConflict(q)
		}
		if refused != nil {
			return refused
		}
		if err := requireInfo(q); err != nil {
			return err
		}
		d, err := store(tx, q, latest, text)
		if err != nil {
			return err
		}
		out = &Sent{Question: q, Draft: d}
		return s.resolve(ctx, tx, c.OrgID, q, StatusAnswered, text)
	})
	if err != nil {
		return nil, err
	}
	if !out.Already {
		// The asker's agent wakes on any replica; the person's open pages
		// stop counting the question as waiting.
		s.changed(c.OrgID, out.To, out.From)
	}
	return out, nil
}

// onLatest runs fn, for action, on version of the answer to msgID when it
// is the latest draft of a question pending for userID, holding the
// question (see questionForUpdate) so that no proposal, send or other
// decision on it runs in between.
func (s *Service) onLatest(ctx context.Context, orgID, userID, msgID string, version int, action string, fn func(db.Querier, *Draft) (*Draft, error)) (out *Draft, err error) {
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		q, err := s.questionForUpdate(ctx, tx, orgID, userID, msgID)
		if err != nil {
			return err
		}
		if err := requireRecipient(q, userID, action); err != nil {
			return err
		}
		if !q.open() {
			return resolvedConflict(q)
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

// AnswerDirectly sends text, written by the caller, as the answer to a
// question sent to them, with no agent involved: it is stored as their own
// approved version, the question is answered and the asker's agent woken,
// as by Approve. An answer with the text already sent sends nothing and
// reports Already; of two concurrent answers (this and an agent's send),
// exactly one is sent. Given modes, it is made only in one of them, as
// Approve.
//
// Returns EInvalid, ENotFound, EForbidden, EConflict.
func (s *Service) AnswerDirectly(ctx context.Context, c ctalk.Caller, msgID, text string, modes ...InMode) (*Sent, error) {
	text, err := ctalk.Text("answer", text, MaxAnswerLen, true)
	if err != nil {
		return nil, err
	}
	return s.sendDecision(ctx, c, msgID, "answer", modes,
		func(*Question, *Draft) (string, error) { return text, nil },
		func(tx db.Querier, q *Question, _ *Draft, text string) (*Draft, error) {
			return s.addDraft(ctx, tx, c.OrgID, q.ID, text, true)
		})
}
