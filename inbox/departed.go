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

// HandOverForDeparted hands every question still waiting for userID, a
// member who has left orgID (removed, or deactivated by the org's identity
// provider), to delegate, forwarded with DelegatedNote as the member would
// forward it, so that the asker's waiting agent hears of the move at once
// and the delegate's agent is handed it; a question that cannot go to
// delegate (none given, or no longer a member; the asker; someone who had
// it before; forwarded MaxForwards times) is declined with DepartedReason,
// so that each asker hears at once rather than waiting for an answer that
// cannot come. It runs after the member's removal has committed, so that
// no new question can reach them while it runs; running it again moves or
// declines nothing twice.
//
// Returns only the database's errors.
func (s *Service) HandOverForDeparted(ctx context.Context, orgID, userID, delegate string) (Departed, error) {
	var (
		out     Departed
		changed []string
		moved   []*Question
	)
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		out, changed, moved = Departed{}, changed[:0], moved[:0]
		rows, err := tx.Query(ctx, departedOpenSQL, orgID, userID)
		if err != nil {
			return fmt.Errorf("read questions: %w", err)
		}
		var open []*Question
		for rows.Next() {
			q := &Question{To: userID}
			if err := rows.Scan(&q.ID, &q.From); err != nil {
				rows.Close()
				return err
			}
			open = append(open, q)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		departed := ctalk.Caller{OrgID: orgID, UserID: userID}
		for _, q := range open {
			if delegate != "" {
				fwd, err := s.handOver(ctx, tx, departed, q.ID, delegate)
				if err != nil {
					return err
				}
				if fwd != nil {
					out.Delegated++
					changed, moved = append(changed, fwd.From, delegate), append(moved, fwd)
					continue
				}
			}
			err := s.resolve(ctx, tx, orgID, q, StatusDeclined, DepartedReason)
			if ctalk.ErrorCode(err) == ctalk.EConflict {
				// Resolved meanwhile: answered, withdrawn, or declined by
				// a second deactivation of the same member.
				continue
			}
			if err != nil {
				return err
			}
			out.Declined++
			changed = append(changed, q.From)
		}
		return nil
	})
	if err != nil {
		return Departed{}, err
	}
	s.changed(orgID, append(changed, userID)...)
	for _, q := range moved {
		s.tellLeft(ctx, Left{OrgID: orgID, MessageID: q.ID, RecipientID: userID, How: Forwarded})
	}
	return out, nil
}

// handOver forwards msgID, pending for the departed member c, to delegate
// in tx, as c would; it returns nil, and has written nothing, when the
// question is no longer pending for c or cannot go to delegate.
func (s *Service) handOver(ctx context.Context, tx db.Querier, c ctalk.Caller, msgID, delegate string) (*Question, error) {
	q, err := s.pendingForRecipient(ctx, tx, c.OrgID, c.UserID, msgID, "forward")
	if err == nil {
		err = s.forward(ctx, tx, c, q, delegate, DelegatedNote)
	}
	switch ctalk.ErrorCode(err) {
	case "":
		return q, nil
	case ctalk.EInvalid, ctalk.EConflict, ctalk.ENotFound, ctalk.EForbidden:
		return nil, nil
	}
	return nil, err
}
