package notify

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/ctalk/ctalk/db"
)

// An event is queued only when it can reach someone: a person with no
// email ctalk can send to, no webhook, no browser, or every channel of the
// kind turned off, costs no row in notify_events, nor later work of the
// worker. What the expansion would find is read here, in the caller's
// transaction, in one statement over notify's tables (and the person's
// address from the Directory when email could be chosen).

// reachSQL reads what decides where a person's events can go: their
// settings' channels and pause (NULL without a row), their active
// webhooks, the org's, and their browsers.
const reachSQL = `SELECT
	(SELECT channels FROM notify_settings WHERE org_id = $1 AND user_id = $2),
	(SELECT paused FROM notify_settings WHERE org_id = $1 AND user_id = $2),
	(SELECT COUNT(*) FROM notify_webhooks WHERE org_id = $1 AND user_id = $2 AND disabled_at IS NULL),
	(SELECT COUNT(*) FROM notify_webhooks WHERE org_id = $1 AND user_id = '' AND disabled_at IS NULL),
	(SELECT COUNT(*) FROM notify_push_subscriptions WHERE org_id = $1 AND user_id = $2)`

// pendingSubjectSQL tells whether a subject ($2) has an event not yet
// expanded (a question's reminder): its closing event must be queued to
// end it, whoever it reaches.
const pendingSubjectSQL = `SELECT COUNT(*) FROM (SELECT 1 FROM notify_events WHERE org_id = $1 AND subject = $2 AND expanded_at IS NULL LIMIT 1) p`

// reach reads what the expansion of an event to userID would, enough to
// tell whether it has any destination: the webhooks and browsers are
// counted, not listed.
func (s *Service) reach(ctx context.Context, tx db.Querier, orgID, userID string, k Kind) (*expansion, error) {
	var (
		channels             sql.NullString
		paused               sql.NullBool
		hooks, orgHooks, web int
	)
	if err := tx.QueryRow(ctx, reachSQL, orgID, userID).Scan(&channels, &paused, &hooks, &orgHooks, &web); err != nil {
		return nil, fmt.Errorf("read where notifications go: %w", err)
	}
	in := &expansion{hooks: make([]string, hooks), orgHooks: make([]string, orgHooks), push: make([]string, web)}
	in.settings.Paused = paused.Bool
	if channels.Valid {
		if err := json.Unmarshal([]byte(channels.String), &in.settings.Channels); err != nil {
			return nil, fmt.Errorf("read notification settings: %w", err)
		}
	}
	if s.EmailEnabled() && s.dir != nil && slices.Contains(in.settings.channelsFor(k, true), ChannelEmail) {
		_, email, err := s.dir(ctx, orgID, userID)
		if err != nil && !notFoundErr(err) {
			return nil, fmt.Errorf("look up %s: %w", userID, err)
		}
		in.email = email
	}
	return in, nil
}

// reaches tells whether an event of kind k to userID has a destination.
func (s *Service) reaches(ctx context.Context, tx db.Querier, orgID, userID string, k Kind) (bool, error) {
	if userID == "" {
		return false, nil
	}
	in, err := s.reach(ctx, tx, orgID, userID, k)
	if err != nil {
		return false, err
	}
	return len(s.destinations(k, userID, in)) > 0, nil
}

// needed tells whether e, or what follows from it, reaches anyone: a
// question also through its reminder and the asker's note that it still
// waits; an answer, a decline or a withdrawal also when it must end a
// pending reminder.
func (s *Service) needed(ctx context.Context, tx db.Querier, e Event) (bool, error) {
	ok, err := s.reaches(ctx, tx, e.OrgID, e.UserID, e.Kind)
	if ok || err != nil {
		return ok, err
	}
	switch {
	case e.Kind.closing() && e.Subject != "":
		var n int
		if err := tx.QueryRow(ctx, pendingSubjectSQL, e.OrgID, e.Subject).Scan(&n); err != nil {
			return false, fmt.Errorf("look for pending reminders: %w", err)
		}
		return n > 0, nil
	case e.Kind == KindQuestion:
		org, err := orgSettings(ctx, tx, e.OrgID)
		if err != nil || org.Reminder <= 0 {
			return false, err
		}
		return s.remindsAnyone(ctx, tx, e)
	case e.Kind == KindReminder:
		return s.reaches(ctx, tx, e.OrgID, e.Actor, KindStillWaiting)
	}
	return false, nil
}

// remindsAnyone tells whether a question's reminder reaches its recipient
// or its note the asker.
func (s *Service) remindsAnyone(ctx context.Context, tx db.Querier, e Event) (bool, error) {
	ok, err := s.reaches(ctx, tx, e.OrgID, e.UserID, KindReminder)
	if ok || err != nil {
		return ok, err
	}
	return s.reaches(ctx, tx, e.OrgID, e.Actor, KindStillWaiting)
}

// queueable keeps the events that reach someone.
func (s *Service) queueable(ctx context.Context, tx db.Querier, events []Event) ([]Event, error) {
	out := events[:0:0]
	for _, e := range events {
		ok, err := s.needed(ctx, tx, e)
		if err != nil {
			return nil, fmt.Errorf("queue notification: %w", err)
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}
