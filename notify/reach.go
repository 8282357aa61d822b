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
// without a row), their active webhooks, their browsers and their Slack
// link (the table of package slackapp, read, never written, here); the org's
// webhooks; the org's reminder time (NULL without a row: the default);
// and whether the subject ($4) has an event not yet expanded or whose
// reminder is still ahead (a pending reminder), which its closing event
// must be queued to end.
const reachSQL = `SELECT
	(SELECT channels FROM notify_settings WHERE org_id = $1 AND user_id = $2),
	(SELECT paused FROM notify_settings WHERE org_id = $1 AND user_id = $2),
	(SELECT COUNT(*) FROM notify_webhooks WHERE org_id = $1 AND user_id = $2 AND disabled_at IS NULL),
	(SELECT COUNT(*) FROM notify_push_subscriptions WHERE org_id = $1 AND user_id = $2),
	(SELECT COUNT(*) FROM slack_links WHERE org_id = $1 AND user_id = $2),
	(SELECT channels FROM notify_settings WHERE org_id = $1 AND user_id = $3),
	(SELECT paused FROM notify_settings WHERE org_id = $1 AND user_id = $3),
	(SELECT COUNT(*) FROM notify_webhooks WHERE org_id = $1 AND user_id = $3 AND disabled_at IS NULL),
	(SELECT COUNT(*) FROM notify_push_subscriptions WHERE org_id = $1 AND user_id = $3),
	(SELECT COUNT(*) FROM slack_links WHERE org_id = $1 AND user_id = $3),
	(SELECT COUNT(*) FROM notify_webhooks WHERE org_id = $1 AND user_id = '' AND disabled_at IS NULL),
	(SELECT reminder_seconds FROM notify_org_settings WHERE org_id = $1),
	(SELECT COUNT(*) FROM (SELECT 1 FROM notify_events WHERE org_id = $1 AND subject = $4 AND $4 <> '' AND (expanded_at IS NULL OR remind_at IS NOT NULL) LIMIT 1) p)`

// reachRow is what reachSQL read of one event.
type reachRow struct {
	person, other *expansion
	reminder      time.Duration
	pending       bool
}

// readReach reads reachSQL for e in tx, and keeps what it found of the
// people and the org in the reach cache, for the next event of theirs.
func (s *Service) readReach(ctx context.Context, tx db.Reader, e Event) (*reachRow, error) {
	var sc reachScan
	read := s.reach.Begin(s.db.Now())
	if err := tx.QueryRow(ctx, reachSQL, reachArgs(e)...).Scan(sc.dest()...); err != nil {
		return nil, fmt.Errorf("read where notifications go: %w", err)
	}
	r, err := sc.row()
	if err == nil {
		s.keepScan(e, &sc, read)
	}
	return r, err
}

// reachArgs are the arguments of reachSQL for e.
func reachArgs(e Event) []any { return []any{e.OrgID, e.UserID, e.Actor, e.Subject} }

// reachScan is where a row of reachSQL is scanned.
type reachScan struct {
	channels, otherChannels                 sql.NullString
	paused, otherPaused                     sql.NullBool
	hooks, web, slack, oHooks, oWeb, oSlack int
	orgHooks, pending                       int
	reminder                                sql.NullInt64
}

// dest is where a row of reachSQL is scanned, in its order.
func (sc *reachScan) dest() []any {
	return []any{&sc.channels, &sc.paused, &sc.hooks, &sc.web, &sc.slack,
		&sc.otherChannels, &sc.otherPaused, &sc.oHooks, &sc.oWeb, &sc.oSlack, &sc.orgHooks, &sc.reminder, &sc.pending}
}

// row is what the scanned row says.
func (sc *reachScan) row() (*reachRow, error) {
	r := &reachRow{reminder: DefaultReminder, pending: sc.pending > 0}
	if sc.reminder.Valid {
		r.reminder = time.Duration(sc.reminder.Int64) * time.Second
	}
	var err error
	if r.person, err = reachOf(sc.channels, sc.paused, sc.hooks, sc.web, sc.orgHooks); err != nil {
		return nil, err
	}
	if r.other, err = reachOf(sc.otherChannels, sc.otherPaused, sc.oHooks, sc.oWeb, sc.orgHooks); err != nil {
		return nil, err
	}
	r.person.slack, r.other.slack = sc.slack > 0, sc.oSlack > 0
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
// waits; an answer, a decline, a withdrawal or a forward also when it
// must end a pending reminder.
func (s *Service) needed(ctx context.Context, e Event, r *reachRow) (bool, error) {
	ok, err := s.reaches(ctx, r.person, e.OrgID, e.UserID, e.Kind)
	if ok || err != nil {
		return ok, err
	}
	switch {
	case e.Kind.endsReminders():
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

// queueable keeps the events that reach someone (see reachable).
func (s *Service) queueable(ctx context.Context, tx db.Reader, events []Event) ([]Event, error) {
	reach, err := s.reachable(ctx, tx, events)
	if err != nil {
		return nil, err
	}
	out := events[:0:0]
	for i, e := range events {
		if reach[i] {
			out = append(out, e)
		}
	}
	return out, nil
}

// reachable tells of each event whether it reaches someone. It takes
// what the reach cache holds of its people, or reads once for the events
// of the same people (a claim's reminders, say): only the read of an
// event that ends reminders, of its subject's pending reminder, is its
// own.
func (s *Service) reachable(ctx context.Context, tx db.Reader, events []Event) ([]bool, error) {
	out := make([]bool, len(events))
	reads := map[string]*reachRow{}
	for i, e := range events {
		key := e.OrgID + "\x00" + e.UserID + "\x00" + e.Actor
		r := reads[key]
		if r == nil && !e.Kind.endsReminders() {
			if sc, ok := s.cachedScan(e); ok {
				var err error
				if r, err = sc.row(); err != nil {
					return nil, fmt.Errorf("queue notification: %w", err)
				}
				reads[key] = r
			}
		}
		if r == nil || e.Kind.endsReminders() {
			var err error
			if r, err = s.readReach(ctx, tx, e); err != nil {
				return nil, fmt.Errorf("queue notification: %w", err)
			}
			if !e.Kind.endsReminders() {
				reads[key] = r
			}
		}
		ok, err := s.needed(ctx, e, r)
		if err != nil {
			return nil, fmt.Errorf("queue notification: %w", err)
		}
		out[i] = ok
	}
	return out, nil
}
