package inbox

import (
	"context"
	"fmt"

	"github.com/ctalk/ctalk"
)

// Counts is what waits for a person and what came back to them, for the web
// app's live updates: a page compares them with what it showed.
type Counts struct {
	// Waiting counts the questions waiting for the person's answer.
	Waiting int `json:"waiting"`
	// Drafts counts the draft versions proposed on those questions, so that
	// a new draft raises it.
	Drafts int `json:"drafts"`
	// Replies counts the person's questions that were answered or declined.
	Replies int `json:"replies"`
}

// Counts returns the caller's counts, in one statement.
//
// Returns only the database's errors.
func (s *Service) Counts(ctx context.Context, c ctalk.Caller) (Counts, error) {
	var n Counts
	if err := s.db.QueryRow(ctx, countsSQL, c.OrgID, c.UserID).Scan(&n.Waiting, &n.Drafts, &n.Replies); err != nil {
		return Counts{}, fmt.Errorf("count what waits: %w", err)
	}
	return n, nil
}

// Waiting counts the questions waiting for the caller's answer.
//
// Returns only the database's errors.
func (s *Service) Waiting(ctx context.Context, c ctalk.Caller) (int, error) {
	var n int
	if err := s.db.QueryRow(ctx, waitingSQL, c.OrgID, c.UserID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count waiting questions: %w", err)
	}
	return n, nil
}
