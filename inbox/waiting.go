package inbox

import (
	"context"
	"fmt"
)

// Waiting counts the questions waiting for userID's answer.
func (s *Service) Waiting(ctx context.Context, orgID, userID string) (int, error) {
	var n int
	if err := s.db.QueryRow(ctx, waitingSQL, orgID, userID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count waiting questions: %w", err)
	}
	return n, nil
}
