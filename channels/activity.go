package channels

import (
	"context"
	"fmt"
	"sort"
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
// since on, oldest day first. Days that have ended are counted once from
// the messages and kept (channel_days); only the current day is counted on
// each call, so that 90 days cost about the same as one.
//
// Returns only the database's errors.
func (s *Service) Activity(ctx context.Context, orgID string, since time.Time) ([]Activity, error) {
	now := s.db.Now()
	since = since.UTC().Truncate(24 * time.Hour)
	open := db.OpenDay(now)
	out, done, err := s.keptActivity(ctx, orgID, since, open)
	if err != nil {
		return nil, err
	}
	if missing := db.MissingDays(since, open, done); len(missing) > 0 {
		counted, err := s.keepActivity(ctx, orgID, missing)
		if err != nil {
			return nil, err
		}
		out = append(out, counted...)
	}
	if since.After(open) {
		open = since
	}
	live, err := s.countActivity(ctx, orgID, open, now.Add(24*time.Hour))
	if err != nil {
		return nil, err
	}
	out = append(out, live...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Day != out[j].Day {
			return out[i].Day < out[j].Day
		}
		return out[i].Channel < out[j].Channel
	})
	return out, nil
}

// countActivity counts the messages per channel and day from from until
// until, from the messages themselves.
func (s *Service) countActivity(ctx context.Context, orgID string, from, until time.Time) ([]Activity, error) {
	if !from.Before(until) {
		return nil, nil
	}
	day := s.db.DaySQL("created_at")
	query := `SELECT channel, ` + day + `, COUNT(*), SUM(CASE WHEN by_agent THEN 1 ELSE 0 END)
		FROM channel_messages WHERE org_id = $1 AND created_at >= $2 AND created_at < $3 GROUP BY channel, ` + day
	var out []Activity
	err := s.db.Each(ctx, query, []any{orgID, from, until}, func(r *db.Rows) error {
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

// keptActivity reads the ended days kept from since until open, and which
// days are kept.
func (s *Service) keptActivity(ctx context.Context, orgID string, since, open time.Time) ([]Activity, map[string]bool, error) {
	var out []Activity
	done := map[string]bool{}
	err := s.db.Each(ctx, channelDaysSQL, []any{orgID, since.Format(db.DayLayout), open.Format(db.DayLayout)}, func(r *db.Rows) error {
		var a Activity
		if err := r.Scan(&a.Day, &a.Channel, &a.Messages, &a.ByAgent); err != nil {
			return err
		}
		if a.Channel == "" {
			done[a.Day] = true
		} else {
			out = append(out, a)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("channel activity kept: %w", err)
	}
	return out, done, nil
}

// keepActivity counts the ended days missing and keeps them, each marked
// done. A day another call kept meanwhile keeps its rows: both counted the
// same.
func (s *Service) keepActivity(ctx context.Context, orgID string, missing []time.Time) ([]Activity, error) {
	counted, err := s.countActivity(ctx, orgID, missing[0], missing[len(missing)-1].Add(24*time.Hour))
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, d := range missing {
		want[d.Format(db.DayLayout)] = true
	}
	var out []Activity
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		for d := range want {
			if _, err := tx.Exec(ctx, keepChannelDaySQL, orgID, d, "", 0, 0); err != nil {
				return fmt.Errorf("keep channel activity: %w", err)
			}
		}
		for _, a := range counted {
			if !want[a.Day] {
				continue // kept already, between two missing days
			}
			out = append(out, a)
			if _, err := tx.Exec(ctx, keepChannelDaySQL, orgID, a.Day, a.Channel, a.Messages, a.ByAgent); err != nil {
				return fmt.Errorf("keep channel activity: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
