package notify

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/ctalk/ctalk/db"
)

// An event is queued only when it can reach someone: a person with no
// email ctalk can send to, no webhook, no browser, or every channel of the
// kind turned off, costs no row in notify_events, nor later work of the
// worker. What the expansion would find is read here, in the caller's
// transaction, in one statement over notify's tables (and the person's
// address from the Directory when email could be chosen).

// reachSQL reads, in one statement, what decides where events of a
// subject can go: for the person ($2) and for the other one involved ($3,
// the asker of a question), their settings' channels and pause (NULL
// without a row), their active webhooks and their browsers; the org's
// webhooks; the org's reminder time (NULL without a row: the default);
// and whether the subject ($4) has an event not yet expanded (a pending
// reminder), which its closing event must be queued to end.
const reachSQL = `SELECT
	(SELECT channels FROM notify_settings WHERE org_id = $1 AND user_id = $2),
	(SELECT paused FROM notify_settings WHERE org_id = $1 AND user_id = $2),
	(SELECT COUNT(*) FROM notify_webhooks WHERE org_id = $1 AND user_id = $2 AND disabled_at IS NULL),
	(SELECT COUNT(*) FROM notify_push_subscriptions WHERE org_id = $1 AND user_id = $2),
	(SELECT channels FROM notify_settings WHERE org_id = $1 AND user_id = $3),
	(SELECT paused FROM notify_settings WHERE org_id = $1 AND user_id = $3),
	(SELECT COUNT(*) FROM notify_webhooks WHERE org_id = $1 AND user_id = $3 AND disabled_at IS NULL),
	(SELECT COUNT(*) FROM notify_push_subscriptions WHERE org_id = $1 AND user_id = $3),
	(SELECT COUNT(*) FROM notify_webhooks WHERE org_id = $1 AND user_id = '' AND disabled_at IS NULL),
	(SELECT reminder_seconds FROM notify_org_settings WHERE org_id = $1),
	(SELECT COUNT(*) FROM (SELECT 1 FROM notify_events WHERE org_id = $1 AND subject = $4 AND $4 <> '' AND expanded_at IS NULL LIMIT 1) p)`

// reachRow is what reachSQL read of one event.
type reachRow struct {
	person, other *expansion
	reminder      time.Duration
	pending       bool
}

func (s *Service) readReach(ctx context.Context, tx db.Querier, e Event) (*reachRow, error) {
	var (
		channels, otherChannels                     sql.NullString
		paused, otherPaused                         sql.NullBool
		hooks, web, oHooks, oWeb, orgHooks, pending int
		reminder                                    sql.NullInt64
	)
	err := tx.QueryRow(ctx, reachSQL, e.OrgID, e.UserID, e.Actor, e.Subject).Scan(&channels, &paused, &hooks, &web,
		&otherChannels, &otherPaused, &oHooks, &oWeb, &orgHooks, &reminder, &pending)
	if err != nil {
		return nil, fmt.Errorf("read where notifications go: %w", err)
	}
	r := &reachRow{reminder: DefaultReminder, pending: pending > 0}
	if reminder.Valid {
		r.reminder = time.Duration(reminder.Int64) * time.Second
	}
	if r.person, err = reachOf(channels, paused, hooks, web, orgHooks); err != nil {
		return nil, err
	}
	if r.other, err = reachOf(otherChannels, otherPaused, oHooks, oWeb, orgHooks); err != nil {
		return nil, err
	}
	return r, nil
}

// reachOf is the expansion input reachSQL read of a person: the webhooks
// and browsers counted, not listed.
func reachOf(channels sql.NullString, paused sql.NullBool, hooks, web, orgHooks int) (*expansion, error) {
	in := &expansion{hooks: make([]string, hooks), orgHooks: make([]string, orgHooks), push: make([]string, web)}
	in.settings.Paused = paused.Bool
	if channels.Valid {
		if err := json.Unmarshal([]byte(channels.String), &in.settings.Channels); err != nil {
			return nil, fmt.Errorf("read notification settings: %w", err)
		}
	}
	return in, nil
}

// reaches tells whether an event of kind k to userID, whom in describes,
// has a destination; it looks the person's address up only when email is
// among the kind's channels and nothing else reaches them.
func (s *Service) reaches(ctx context.Context, in *expansion, orgID, userID string, k Kind) (bool, error) {
	if userID == "" {
		return false, nil
	}
	if len(s.destinations(k, userID, in)) > 0 {
		return true, nil
	}
	if !s.EmailEnabled() || s.dir == nil || in.email != "" || !slices.Contains(in.settings.channelsFor(k, true), ChannelEmail) {
		return false, nil
	}
	_, email, err := s.dir(ctx, orgID, userID)
	if err != nil && !notFoundErr(err) {
		return false, fmt.Errorf("look up %s: %w", userID, err)
	}
	in.email = email
	return email != "", nil
}

// needed tells whether e, or what follows from it, reaches anyone: a
// question also through its reminder and the asker's note that it still
// waits; an answer, a decline or a withdrawal also when it must end a
// pending reminder.
func (s *Service) needed(ctx context.Context, e Event, r *reachRow) (bool, error) {
	ok, err := s.reaches(ctx, r.person, e.OrgID, e.UserID, e.Kind)
	if ok || err != nil {
		return ok, err
	}
	switch {
	case e.Kind.closing():
		return r.pending, nil
	case e.Kind == KindQuestion && r.reminder > 0:
		if ok, err := s.reaches(ctx, r.person, e.OrgID, e.UserID, KindReminder); ok || err != nil {
			return ok, err
		}
		return s.reaches(ctx, r.other, e.OrgID, e.Actor, KindStillWaiting)
	case e.Kind == KindReminder:
		return s.reaches(ctx, r.other, e.OrgID, e.Actor, KindStillWaiting)
	}
	return false, nil
}

// queueable keeps the events that reach someone. It reads once for the
// events of the same people (a claim's reminders, say): only a closing
// event's read, of its subject's pending reminder, is its own.
func (s *Service) queueable(ctx context.Context, tx db.Querier, events []Event) ([]Event, error) {
	out := events[:0:0]
	reads := map[string]*reachRow{}
	for _, e := range events {
		key := e.OrgID + "\x00" + e.UserID + "\x00" + e.Actor
		r := reads[key]
		if r == nil || e.Kind.closing() {
			var err error
			if r, err = s.readReach(ctx, tx, e); err != nil {
				return nil, fmt.Errorf("queue notification: %w", err)
			}
			if !e.Kind.closing() {
				reads[key] = r
			}
		}
		ok, err := s.needed(ctx, e, r)
		if err != nil {
			return nil, fmt.Errorf("queue notification: %w", err)
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}
