package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Start loads what the service needs before it sends (the unsubscribe
// key), so that a server that cannot fails at start rather than later.
//
// Returns only the database's errors.
func (s *Service) Start(ctx context.Context) error { return s.loadKeys(ctx) }

// Delivery is one line of the delivery log: what was sent, where, when,
// and whether it failed.
type Delivery struct {
	ID       string     `json:"delivery_id"`
	Kind     Kind       `json:"kind"`
	Channel  string     `json:"channel"`
	Target   string     `json:"to" jsonschema:"the email address, or the webhook's id"`
	Status   string     `json:"status" jsonschema:"pending, sent or failed"`
	Attempts int        `json:"attempts"`
	Error    string     `json:"last_error,omitempty"`
	Queued   time.Time  `json:"queued_at"`
	Finished *time.Time `json:"finished_at,omitempty"`
	// UserID is the person told, in the org's failures.
	UserID string `json:"user_id,omitempty"`
}

func scanDelivery(r interface{ Scan(...any) error }, extra ...any) (*Delivery, error) {
	d := &Delivery{}
	var kind string
	var finished db.NullTime
	if err := r.Scan(append([]any{&d.ID, &kind, &d.Channel, &d.Target, &d.Status, &d.Attempts, &d.Error, &d.Queued, &finished}, extra...)...); err != nil {
		return nil, err
	}
	d.Kind, d.Queued = Kind(kind), d.Queued.UTC()
	if finished.Valid {
		d.Finished = &finished.Time
	}
	return d, nil
}

// DeliveryLog returns a person's latest deliveries, newest first, at most
// limit.
//
// Returns only the database's errors.
func (s *Service) DeliveryLog(ctx context.Context, c ctalk.Caller, limit int) ([]*Delivery, error) {
	return s.deliveries(ctx, deliveryLogSQL, false, c.OrgID, c.UserID, limit)
}

// OrgFailures returns the org's latest failed deliveries, for its admins.
//
// Returns only the database's errors.
func (s *Service) OrgFailures(ctx context.Context, orgID string, limit int) ([]*Delivery, error) {
	return s.deliveries(ctx, orgFailuresSQL, true, orgID, limit)
}

func (s *Service) deliveries(ctx context.Context, query string, withUser bool, args ...any) ([]*Delivery, error) {
	rows, err := s.db.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read delivery log: %w", err)
	}
	defer rows.Close()
	out := []*Delivery{}
	for rows.Next() {
		var d *Delivery
		var err error
		if withUser {
			var user string
			d, err = scanDelivery(rows, &user)
			if d != nil {
				d.UserID = user
			}
		} else {
			d, err = scanDelivery(rows)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
