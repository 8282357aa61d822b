// Package inbox carries questions between the people of an organization:
// asking, drafting, approving and answering, and waking the agents that wait.
package inbox

import (
	"context"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Service manages questions and answers.
type Service struct {
	db *db.DB
}

// NewService returns a Service over d.
func NewService(d *db.DB) *Service {
	return &Service{db: d}
}

// Interaction summarizes the questions between two users of one org.
type Interaction struct {
	// YouAsked counts questions the caller asked the other user.
	YouAsked int `json:"questions_you_asked_them"`
	// TheyAsked counts questions the other user asked the caller.
	TheyAsked int `json:"questions_they_asked_you"`
	// Last is the time of the latest question or answer between the two.
	Last *time.Time `json:"last_interaction,omitempty"`
}

// Interaction returns the history between me and other in orgID.
func (s *Service) Interaction(ctx context.Context, orgID, me, other string) (*Interaction, error) {
	var (
		in               Interaction
		lastAsk, lastRes db.NullTime
	)
	err := s.db.QueryRowContext(ctx, `
		SELECT
			COUNT(CASE WHEN asker_id = $2 THEN 1 END),
			COUNT(CASE WHEN asker_id = $3 THEN 1 END),
			MAX(created_at), MAX(resolved_at)
		FROM questions
		WHERE org_id = $1 AND ((asker_id = $2 AND recipient_id = $3) OR (asker_id = $3 AND recipient_id = $2))`,
		orgID, me, other).Scan(&in.YouAsked, &in.TheyAsked, &lastAsk, &lastRes)
	if err != nil {
		return nil, db.Translate(err)
	}
	for _, t := range []db.NullTime{lastAsk, lastRes} {
		if t.Valid && (in.Last == nil || t.Time.After(*in.Last)) {
			tt := t.Time
			in.Last = &tt
		}
	}
	return &in, nil
}
