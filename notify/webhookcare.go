package notify

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// What a webhook's owner does to it besides adding and deleting it, as
// GitHub's webhook settings offer: send a test event, send a logged
// delivery again, and change its signing secret.

// KindTest is the event of a webhook's test: told to the webhook alone, on
// its owner's request.
const KindTest Kind = "test"

// TestWebhook sends a test event to the webhook id of owner (a person's
// user id, or empty for the org's, whose caller checked that they are an
// admin) at once, signed as every delivery, and returns what the webhook
// answered: nil when it took it. It is no delivery of the queue and is
// not retried; a webhook that answers 410 Gone is disabled as for any
// delivery.
//
// Returns ENotFound for another person's or org's webhook, and the
// EUnavailable of a webhook that failed, saying why.
func (s *Service) TestWebhook(ctx context.Context, orgID, owner, id string) error {
	id = strings.TrimSpace(id)
	hooks, err := s.readWebhooks(ctx, orgID, []any{id})
	if err != nil {
		return err
	}
	if h := hooks[id]; h == nil || h.owner != owner {
		return notFound("webhook")
	}
	now := s.db.Now()
	e := &storedEvent{Event: Event{Kind: KindTest, OrgID: orgID, UserID: owner, Link: "/profile/notifications"}, ID: newID("test_"), CreatedAt: now}
	d := &delivery{ID: e.ID, EventID: e.ID, Channel: ChannelWebhook, Target: id, Attempts: 1, CreatedAt: now, Event: e, hook: hooks[id], hookRead: true}
	if err := s.sendWebhook(ctx, d); err != nil {
		return ctalk.Errorf(ctalk.EUnavailable, "the test event did not reach the webhook: %v", err)
	}
	return nil
}

// Redeliver sends the logged delivery id again, to the webhook of owner
// (a person's user id, or empty for the org's, whose caller checked that
// they are an admin) it went to: it is pending again at once, with its
// attempts counted anew, under its id (its webhook-id), so that a receiver
// that took it the first time can tell.
//
// Returns ENotFound for a delivery that is not to a webhook of owner's,
// EConflict for one still being delivered.
func (s *Service) Redeliver(ctx context.Context, orgID, owner, id string) error {
	id = strings.TrimSpace(id)
	var status string
	err := s.db.QueryRow(ctx, ownedDeliverySQL, orgID, id, owner).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("delivery to a webhook of yours")
	}
	if err != nil {
		return fmt.Errorf("read delivery: %w", err)
	}
	if status == "pending" {
		return ctalk.Errorf(ctalk.EConflict, "delivery %s is still being delivered; wait for its outcome in the log", id)
	}
	var n int64
	err = s.db.Write(ctx, func(q db.Querier) error {
		res, err := q.Exec(ctx, redeliverSQL, s.db.Now(), orgID, id)
		if err == nil {
			n, _ = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("redeliver: %w", err)
	}
	if n == 0 {
		return ctalk.Errorf(ctalk.EConflict, "delivery %s is being delivered again already", id)
	}
	s.wake()
	return nil
}

// RotateWebhookSecret gives the webhook id of owner (a person's user id,
// or empty for the org's, whose caller checked that they are an admin) a
// new signing secret, returned this once: every request from now on is
// signed with it alone.
//
// Returns ENotFound for another person's or org's webhook.
func (s *Service) RotateWebhookSecret(ctx context.Context, orgID, owner, id string) (*Webhook, string, error) {
	id = strings.TrimSpace(id)
	secret := newWebhookSecret()
	var n int64
	err := s.db.Write(ctx, func(q db.Querier) error {
		res, err := q.Exec(ctx, rotateWebhookSecretSQL, secret, orgID, id, owner)
		if err == nil {
			n, _ = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("rotate webhook secret: %w", err)
	}
	if n == 0 {
		return nil, "", notFound("webhook")
	}
	hooks, err := s.Webhooks(ctx, orgID, owner)
	if err != nil {
		return nil, "", err
	}
	for _, w := range hooks {
		if w.ID == id {
			return w, secret, nil
		}
	}
	return nil, "", notFound("webhook")
}
