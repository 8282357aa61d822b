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

// DeclineForDeparted declines every question still waiting for userID, a
// member who has left orgID (removed, or deactivated by the org's identity
// provider), with DepartedReason, so that each asker hears at once rather
// than waiting for an answer that cannot come; it returns how many it
// declined. It runs after the member's removal has committed, so that no
// new question can reach them while it runs; running it again declines
// nothing twice.
//
// Returns only the database's errors.
func (s *Service) DeclineForDeparted(ctx context.Context, orgID, userID string) (int, error) {
	var declined []*Question
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		declined = declined[:0]
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
		for _, q := range open {
			err := s.resolve(ctx, tx, orgID, q, StatusDeclined, DepartedReason)
			if ctalk.ErrorCode(err) == ctalk.EConflict {
				// Resolved meanwhile: answered, withdrawn, or declined by
				// a second deactivation of the same member.
				continue
			}
			if err != nil {
				return err
			}
			declined = append(declined, q)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	users := []string{userID}
	for _, q := range declined {
		users = append(users, q.From)
	}
	s.changed(orgID, users...)
	return len(declined), nil
}
