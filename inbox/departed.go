package inbox

import (
	"context"
	"fmt"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// DepartedReason is the reason given to askers whose question was declined
// because its recipient left the organization.
const DepartedReason = "no longer in the organization"

// DelegatedNote is the note of a question handed to a departed member's
// delegate, which its asker reads with the move.
const DelegatedNote = "handed to their delegate: no longer in the organization"

// Departed is what became of the questions still waiting for a member who
// left.
type Departed struct {
	// Delegated went to the member's delegate; Declined to their askers.
	Delegated, Declined int
}

// HandOverForDeparted hands every question still open for userID, a
// member who has left orgID (removed, or deactivated by the org's identity
// provider), waiting for them or for its asker's information, to delegate,
// forwarded with DelegatedNote as the member would forward it, so that the
// asker's waiting agent hears of the move at once and the delegate's agent
// is handed it (a question waiting for information keeps waiting, and the
// asker's information then goes to delegate); a question that cannot go to
// delegate (none given, or no longer a member; the asker; someone who had
// it before; forwarded MaxForwards times) is declined with DepartedReason,
// so that each asker hears at once rather than waiting for an answer that
// cannot come. It runs after the member's removal has committed, so that
// no new question can reach them while it runs; running it again moves or
// declines nothing twice.
//
// Returns only the database's errors.
func (s *Service) HandOverForDeparted(ctx context.Context, orgID, userID, delegate string) (Departed, error) {
	var h *handing
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		h = &handing{departed: ctalk.Caller{OrgID: orgID, UserID: userID}, delegate: delegate}
		var open []*Question
		err := db.Each(ctx, tx, func(r *db.Rows) error {
			q := &Question{To: userID}
			open = append(open, q)
			return r.Scan(&q.ID, &q.From)
		}, departedOpenSQL, orgID, userID)
		if err != nil {
			return fmt.Errorf("read questions: %w", err)
		}
		for _, q := range open {
			if err := s.handOverOne(ctx, tx, h, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Departed{}, err
	}
	s.changed(orgID, append(h.changed, userID)...)
	for _, q := range h.moved {
		s.tellLeft(ctx, Left{OrgID: orgID, MessageID: q.ID, RecipientID: userID, How: Forwarded})
	}
	return h.out, nil
}

// handing is what HandOverForDeparted has done so far, in its transaction.
type handing struct {
	departed ctalk.Caller
	delegate string
	out      Departed
	// changed are the users whose agents hear of it; moved the questions
	// handed to the delegate.
	changed []string
	moved   []*Question
}

// handOverOne hands q, open for h's departed member, to h's delegate, or
// declines it, in tx.
func (s *Service) handOverOne(ctx context.Context, tx db.Querier, h *handing, q *Question) error {
	if h.delegate != "" {
		fwd, err := s.handOver(ctx, tx, h.departed, q.ID, h.delegate)
		if err != nil {
			return err
		}
		if fwd != nil {
			h.out.Delegated++
			h.changed, h.moved = append(h.changed, fwd.From, h.delegate), append(h.moved, fwd)
			return nil
		}
	}
	err := s.resolve(ctx, tx, h.departed.OrgID, q, StatusDeclined, DepartedReason)
	if ctalk.ErrorCode(err) == ctalk.EConflict {
		// Resolved meanwhile: answered, withdrawn, or declined by a second
		// deactivation of the same member.
		return nil
	}
	if err != nil {
		return err
	}
	h.out.Declined++
	h.changed = append(h.changed, q.From)
	return nil
}

// handOver moves msgID, open for the departed member c, to delegate in tx,
// as c would forward it; it returns nil, and has written nothing, when the
// question is no longer open for c or cannot go to delegate.
func (s *Service) handOver(ctx context.Context, tx db.Querier, c ctalk.Caller, msgID, delegate string) (*Question, error) {
	q, err := s.pendingForRecipient(ctx, tx, c.OrgID, c.UserID, msgID, "forward")
	if err == nil {
		err = s.move(ctx, tx, c, q, delegate, DelegatedNote)
	}
	switch ctalk.ErrorCode(err) {
	case "":
		return q, nil
	case ctalk.EInvalid, ctalk.EConflict, ctalk.ENotFound, ctalk.EForbidden:
		return nil, nil
	}
	return nil, err
}
