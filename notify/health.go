package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Health is one UTC day's deliveries of one channel (email or webhook) in
// one state, for the admins' overview. It carries no target and no error
// text: an address or a webhook's URL is not the overview's to show.
type Health struct {
	Day     string
	Channel string
	// Status is pending, sent or failed.
	Status     string
	Deliveries int64
	// Attempts sums the deliveries' attempts, so that retries show.
	Attempts int64
}

// Health returns orgID's notification deliveries per UTC day, channel and
// state from the day of since on, oldest day first.
//
// Returns only the database's errors.
func (s *Service) Health(ctx context.Context, orgID string, since time.Time) ([]Health, error) {
	day := s.db.DaySQL("created_at")
	query := `SELECT ` + day + `, channel, status, COUNT(*), SUM(attempts)
		FROM notify_deliveries WHERE org_id = $1 AND created_at >= $2 GROUP BY ` + day + `, channel, status ORDER BY 1, 2, 3`
	var out []Health
	err := s.db.Each(ctx, query, []any{orgID, since.UTC().Truncate(24 * time.Hour)}, func(r *db.Rows) error {
		var h Health
		err := r.Scan(&h.Day, &h.Channel, &h.Status, &h.Deliveries, &h.Attempts)
		out = append(out, h)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("delivery health: %w", err)
	}
	return out, nil
}
