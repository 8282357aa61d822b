package inbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/links"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/wait"
)

// Draft is one proposed version of an answer.
type Draft struct {
	MessageID string    `json:"message_id"`
	Version   int       `json:"version"`
	Text      string    `json:"draft_text"`
	CreatedAt time.Time `json:"created_at"`
	Approved  bool      `json:"approved_by_person"`
	Rejected  bool      `json:"rejected_by_person"`
	// Note is the person's word to their agent on a rejected draft.
	Note string `json:"rejection_note,omitempty" jsonschema:"when rejected: what your person wants changed, in their words"`
	// ByPerson marks a version the person wrote in the web app: their edit
	// of the agent's draft, approved as they wrote it, or their own answer.
	ByPerson bool `json:"written_by_person,omitempty" jsonschema:"true when your person wrote this version in the web app (approved as written)"`
}

// Propose saves a new draft version of the answer to a question and
// returns the org's approval mode: in human mode the person approves it in
// the web app before it may be sent.
//
// Returns EInvalid, ENotFound, EForbidden (not the recipient), EConflict (not pending).
func (s *Service) Propose(ctx context.Context, c ctalk.Caller, msgID, text string) (d *Draft, mode string, err error) {
	text, err = ctalk.Text("draft_text", text, MaxAnswerLen, true)
	if err != nil {
		return nil, "", err
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		// Locked, so that concurrent proposals number their versions in turn.
		q, err := s.pendingForRecipient(ctx, tx, c.OrgID, c.UserID, msgID, "draft an answer to")
		if err != nil {
			return err
		}
		if mode, err = orgs.ApprovalMode(ctx, tx, c.OrgID); err != nil {
			return err
		}
		if d, err = s.addDraft(ctx, tx, c.OrgID, q.ID, text, false); err != nil {
			return err
		}
		if mode != orgs.ApprovalHuman {
			return nil
		}
		return s.queue(ctx, tx, notify.Event{Kind: notify.KindDraft, OrgID: c.OrgID, UserID: c.UserID, Actor: q.From, Subject: q.ID,
			Text: text, Link: links.Draft("", q.ID, d.Version)})
	})
	if err != nil {
		return nil, "", err
	}
	// The person's open pages show the new draft to approve.
	s.changed(c.OrgID, c.UserID)
	return d, mode, nil
}

// pendingForRecipient loads and locks (see questionForUpdate) a pending
// question sent to userID, for action (such as "answer"), refusing anyone
// else: EForbidden for the asker, ENotFound for anyone else, EConflict when
// it is no longer pending.
func (s *Service) pendingForRecipient(ctx context.Context, tx db.Querier, orgID, userID, msgID, action string) (*Question, error) {
	q, err := s.questionForUpdate(ctx, tx, orgID, userID, msgID)
	if err != nil {
		return nil, err
	}
	if err := requireRecipient(q, userID, action); err != nil {
		return nil, err
	}
	if err := requirePending(q); err != nil {
		return nil, err
	}
	return q, nil
}

// addDraft stores the next version of a question's answer, on a question
// its caller locked; byPerson stores it as the person's own, approved.
func (s *Service) addDraft(ctx context.Context, tx db.Querier, orgID, msgID, text string, byPerson bool) (*Draft, error) {
	now := s.db.Now()
	d := &Draft{MessageID: msgID, Text: text, CreatedAt: now, Approved: byPerson, ByPerson: byPerson}
	if err := tx.QueryRow(ctx, nextDraftVersionSQL, orgID, msgID).Scan(&d.Version); err != nil {
		return nil, fmt.Errorf("number draft: %w", err)
	}
	var approved *time.Time
	if byPerson {
		approved = &now
	}
	if _, err := tx.Exec(ctx, insertDraftSQL, orgID, msgID, d.Version, text, now, approved, byPerson); err != nil {
		return nil, fmt.Errorf("store draft: %w", err)
	}
	return d, nil
}

// latestDraft returns the newest draft of a question, or nil.
func latestDraft(ctx context.Context, q db.Reader, orgID, msgID string) (*Draft, error) {
	d, err := scanDraft(q.QueryRow(ctx, latestDraftSQL, orgID, msgID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read latest draft: %w", err)
	}
	return d, nil
}

func scanDraft(r interface{ Scan(...any) error }) (*Draft, error) {
	d := &Draft{}
	var approved, rejected db.NullTime
	var note sql.NullString
	if err := r.Scan(&d.MessageID, &d.Version, &d.Text, &d.CreatedAt, &approved, &rejected, &note, &d.ByPerson); err != nil {
		return nil, err
	}
	d.CreatedAt = d.CreatedAt.UTC()
	d.Approved, d.Rejected, d.Note = approved.Valid, rejected.Valid, note.String
	return d, nil
}

// Sent is an answer sent: the question answered, the draft version whose
// text was sent, and whether the call found it sent already.
type Sent struct {
	*Question
	// Draft is the version sent: the latest draft.
	Draft *Draft
	// Already is true when the question had been answered with the very
	// same text before the call, which then sent nothing: the agent's
	// send of what its person's decision sent, or a decision repeated.
	Already bool
}

// Send delivers the answer to a question. The server, not the model, enforces
// approval: only the recipient, only a pending question, only the exact text
// of the latest draft, never a draft the person rejected, and in human mode
// only once the person approved that draft in the web app. A question
// already answered with finalText (the person's approval or edit sent it,
// or an earlier send) is returned as Already: nothing is sent twice; one
// answered with other text is a conflict that quotes what was sent.
//
// Returns EInvalid, ENotFound, EForbidden, EConflict.
func (s *Service) Send(ctx context.Context, c ctalk.Caller, msgID, finalText string) (*Sent, error) {
	finalText = strings.TrimSpace(finalText)
	return s.sendDecision(ctx, c, msgID, "answer", nil,
		func(*Question, *Draft) (string, error) { return finalText, nil },
		func(tx db.Querier, q *Question, latest *Draft, text string) (*Draft, error) {
			mode, err := orgs.ApprovalMode(ctx, tx, c.OrgID)
			if err != nil {
				return nil, err
			}
			return latest, sendable(q.ID, latest, mode, text)
		})
}

// resolvedConflict is the refusal of a send or decision on q, which is no
// longer open: an answered question's quotes the answer sent.
func resolvedConflict(q *Question) error {
	if q.Status != StatusAnswered {
		return requirePending(q)
	}
	return ctalk.Errorf(ctalk.EConflict, "message %s is already answered, and nothing more can be sent for it; this answer was sent at %s: %q",
		q.ID, q.ResolvedAt.UTC().Format(time.RFC3339), q.Answer)
}

// sendable refuses to send finalText as the answer to question id whose
// latest draft is d, in approval mode, unless the person may have it sent.
func sendable(id string, d *Draft, mode, finalText string) error {
	switch {
	case d == nil:
		return ctalk.Errorf(ctalk.EConflict, "message %s has no proposed draft; call propose_response with the text, show it to your person, and send it only after they approve it", id)
	case d.Rejected && d.Note != "":
		return ctalk.Errorf(ctalk.EForbidden, "your person rejected draft version %d of message %s with this note: %q; propose a new draft that addresses it", d.Version, id, d.Note)
	case d.Rejected:
		return ctalk.Errorf(ctalk.EForbidden, "your person rejected draft version %d of message %s; ask them what to change and propose a new draft", d.Version, id)
	case d.Text != finalText && d.ByPerson:
		return ctalk.Errorf(ctalk.EConflict, "final_text is not the latest draft of message %s: your person wrote version %d themselves and approved it; check_inbox shows its exact text in latest_draft, send exactly that", id, d.Version)
	case d.Text != finalText:
		return ctalk.Errorf(ctalk.EConflict, "final_text is not the latest proposed draft (version %d) of message %s; propose the new text with propose_response and get your person's approval of it first", d.Version, id)
	case mode == orgs.ApprovalHuman && !d.Approved:
		return &NotApprovedError{MessageID: id, Version: d.Version,
			err: ctalk.Errorf(ctalk.EForbidden, "your organization requires a person to approve each answer: draft version %d of message %s is not approved yet; ask your person to open the approval_url from propose_response (their ctalk inbox), sign in and press Approve and send: that sends it to the asker at once, with nothing more for you to do", d.Version, id)}
	}
	return nil
}

// NotApprovedError is Send's refusal, EForbidden, of a draft its person
// has not yet decided on in an org with human approval: the one refusal
// that the person's decision in the web app can lift.
type NotApprovedError struct {
	MessageID string
	Version   int
	err       *ctalk.Error
}

func (e *NotApprovedError) Error() string { return e.err.Error() }

// Unwrap makes the refusal's code and message those of a ctalk error.
func (e *NotApprovedError) Unwrap() error { return e.err }

// InMode is an approval mode in which a person's decision may be made,
// given to Approve, Edit or AnswerDirectly by a door that only some modes
// trust: the chat client's card decides only in agent mode, since the chat
// is not a channel that only the person uses. The decision reads the org's
// mode in its own transaction, once it holds the question, as Send does,
// so that an admin's switch of the mode cannot slip in between a door's
// check and the decision.
type InMode string

// requireMode refuses the decision on question id with a *ModeError
// unless org orgID's approval mode, read through tx, is one of modes; with
// no modes it reads nothing.
func requireMode(ctx context.Context, tx db.Querier, orgID, id string, modes []InMode) error {
	if len(modes) == 0 {
		return nil
	}
	mode, err := orgs.ApprovalMode(ctx, tx, orgID)
	if err != nil {
		return err
	}
	for _, m := range modes {
		if string(m) == mode {
			return nil
		}
	}
	return &ModeError{MessageID: id, Mode: mode,
		err: ctalk.Errorf(ctalk.EForbidden, "your organization's approval mode is %s, which does not let this decision on message %s be made here: your person decides in ctalk's web app", mode, id)}
}

// ModeError is the refusal, EForbidden, of a decision made in an approval
// mode that its door is not trusted in (see InMode): Mode is the org's
// mode as the decision read it.
type ModeError struct {
	MessageID, Mode string
	err             *ctalk.Error
}

func (e *ModeError) Error() string { return e.err.Error() }

// Unwrap makes the refusal's code and message those of a ctalk error.
func (e *ModeError) Unwrap() error { return e.err }

// AwaitDecision waits, up to opts.Timeout, until draft version of
// question msgID, sent to the caller, no longer waits for its person's
// decision in the web app: approved, rejected, replaced by a newer draft
// (their edit), or the question no longer pending. It reports whether that
// happened; it reads and claims nothing.
//
// Returns ENotFound when msgID is not a question of the caller's.
func (s *Service) AwaitDecision(ctx context.Context, c ctalk.Caller, msgID string, version int, opts wait.Options) (bool, error) {
	decided := false
	err := s.wait(ctx, c.OrgID, c.UserID, opts, func() (bool, error) {
		q, err := question(ctx, s.db, c.OrgID, c.UserID, msgID)
		if err != nil {
			return false, err
		}
		if !q.open() {
			decided = true
			return true, nil
		}
		d, err := latestDraft(ctx, s.db, c.OrgID, q.ID)
		if err != nil {
			return false, err
		}
		decided = d == nil || d.Version != version || d.Approved || d.Rejected
		return decided, nil
	})
	return decided, err
}

// Decline closes a question without an answer; the reason reaches the asker.
//
// Returns EInvalid, ENotFound, EForbidden, EConflict.
func (s *Service) Decline(ctx context.Context, c ctalk.Caller, msgID, reason string) (*Question, error) {
	reason, err := ctalk.Text("reason", reason, MaxReasonLen, true)
	if err != nil {
		return nil, err
	}
	var q *Question
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		var err error
		if q, err = question(ctx, tx, c.OrgID, c.UserID, msgID); err != nil {
			return err
		}
		if err := requireRecipient(q, c.UserID, "decline"); err != nil {
			return err
		}
		if err := requirePending(q); err != nil {
			return err
		}
		return s.resolve(ctx, tx, c.OrgID, q, StatusDeclined, reason)
	})
	if err != nil {
		return nil, err
	}
	// The recipient's open pages stop counting it as waiting.
	s.changed(c.OrgID, q.To, q.From)
	return q, nil
}

// Withdraw closes a question its asker no longer needs answered; the
// recipient is told if it had already been shown the question.
//
// Returns EInvalid, ENotFound, EForbidden, EConflict.
func (s *Service) Withdraw(ctx context.Context, c ctalk.Caller, msgID string) (*Question, error) {
	var q *Question
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		var err error
		if q, err = question(ctx, tx, c.OrgID, c.UserID, msgID); err != nil {
			return err
		}
		if q.From != c.UserID {
			return ctalk.Errorf(ctalk.EForbidden, "only %s, who asked message %s, may withdraw it; decline it instead with decline_question", q.From, q.ID)
		}
		if err := requirePending(q); err != nil {
			return err
		}
		return s.resolve(ctx, tx, c.OrgID, q, StatusWithdrawn, "")
	})
	if err != nil {
		return nil, err
	}
	s.changed(c.OrgID, q.To, q.From)
	s.tellLeft(ctx, Left{OrgID: c.OrgID, MessageID: q.ID, RecipientID: q.To, How: StatusWithdrawn})
	return q, nil
}

// resolve records the outcome of a pending question and notifies both sides.
// The pending check is repeated in the UPDATE so that two concurrent sends
// cannot both succeed.
func (s *Service) resolve(ctx context.Context, tx db.Querier, orgID string, q *Question, status, text string) error {
	now := s.db.Now()
	var resolution sql.NullString
	if status != StatusWithdrawn {
		resolution = sql.NullString{String: text, Valid: true}
	}
	res, err := tx.Exec(ctx, resolveSQL,
		status, resolution, now, orgID, q.ID)
	if err != nil {
		return fmt.Errorf("resolve question: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ctalk.Errorf(ctalk.EConflict, "message %s was resolved by another call just now; check_replies or check_inbox shows its state", q.ID)
	}
	if _, err := tx.Exec(ctx, touchPairSQL, now, orgID, q.From, q.To); err != nil {
		return fmt.Errorf("update pair statistics: %w", err)
	}
	if status == StatusWithdrawn {
		// A recipient never shown the question needs no notice of its withdrawal.
		if _, err := tx.Exec(ctx, settleUnseenWithdrawalSQL, now, orgID, q.ID); err != nil {
			return fmt.Errorf("settle withdrawal notice: %w", err)
		}
	}
	q.Status, q.ResolvedAt = status, &now
	ev := notify.Event{OrgID: orgID, UserID: q.From, Actor: q.To, Subject: q.ID, Text: text, Link: "/asked#q-" + q.ID}
	switch status {
	case StatusAnswered:
		q.Answer, q.ResolvedBy = text, q.To
		ev.Kind = notify.KindAnswered
	case StatusDeclined:
		q.Reason, q.ResolvedBy = text, q.To
		ev.Kind = notify.KindDeclined
	case StatusWithdrawn:
		q.ResolvedBy = q.From
		// Told to nobody: it ends the question's reminders.
		ev = notify.Event{Kind: notify.KindWithdrawn, OrgID: orgID, UserID: q.To, Actor: q.From, Subject: q.ID}
	}
	return s.queue(ctx, tx, ev)
}
