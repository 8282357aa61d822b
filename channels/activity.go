package channels

import (
	"context"
	"fmt"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Activity is one channel's messages of one UTC day, for the admins'
// overview.
type Activity struct {
	Channel string
	Day     string
	// Messages counts the day's messages; ByAgent those an agent posted.
	Messages, ByAgent int64
}

// Activity returns orgID's messages per channel and UTC day from the day of
// since on, oldest day first: a range of the org's messages read through
// their (org_id, created_at) index.
//
// Returns only the database's errors.
func (s *Service) Activity(ctx context.Context, orgID string, since time.Time) ([]Activity, error) {
	day := s.db.DaySQL("created_at")
	query := `SELECT channel, ` + day + `, COUNT(*), SUM(CASE WHEN by_agent THEN 1 ELSE 0 END)
		FROM channel_messages WHERE org_id = $1 AND created_at >= $2 GROUP BY channel, ` + day + ` ORDER BY 2, 1`
	var out []Activity
	err := s.db.Each(ctx, query, []any{orgID, since.UTC().Truncate(24 * time.Hour)}, func(r *db.Rows) error {
		var a Activity
		err := r.Scan(&a.Channel, &a.Day, &a.Messages, &a.ByAgent)
		out = append(out, a)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("channel activity: %w", err)
	}
	return out, nil
}
