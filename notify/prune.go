package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/ctalk/ctalk/db"
)

func (s *Service) measureQueueAge(ctx context.Context) {
	now := s.db.Now()
	var oldest db.NullTime
	if err := s.db.QueryRow(ctx, queueAgeSQL, now).Scan(&oldest); err != nil {
		return
	}
	age := 0.0
	if oldest.Valid {
		age = now.Sub(oldest.Time).Seconds()
	}
	s.metrics.queueAge.Set(age)
}

// Retention is how long expanded events and their deliveries are kept (the
// delivery log).
const Retention = 30 * 24 * time.Hour

// Prune deletes the deliveries finished longer than Retention ago, and the
// events left with none pending. Run calls it hourly.
//
// Returns only the database's errors.
func (s *Service) Prune(ctx context.Context) error {
	return s.db.Write(ctx, func(q db.Querier) error {
		before := s.db.Now().Add(-Retention)
		if _, err := q.Exec(ctx, pruneDeliveriesSQL, before); err != nil {
			return fmt.Errorf("prune deliveries: %w", err)
		}
		if _, err := q.Exec(ctx, pruneEventsSQL, before); err != nil {
			return fmt.Errorf("prune events: %w", err)
		}
		return nil
	})
}
