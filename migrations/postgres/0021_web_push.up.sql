-- Web Push subscriptions (package notify): one per browser a person turned
-- push on in, from the browser's PushSubscription. id is a hash of the
-- endpoint, so that subscribing the same browser again replaces its row;
-- p256dh and auth are the browser's keys that payloads are encrypted to
-- (RFC 8291). A push service answering 404 or 410 deletes the row. The
-- server's VAPID key pair (RFC 8292) is kept in notify_keys under 'vapid',
-- made at the first start; its private half is a secret.
CREATE TABLE notify_push_subscriptions (
    org_id     TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    id         TEXT NOT NULL,
    endpoint   TEXT NOT NULL,
    p256dh     TEXT NOT NULL,
    auth       TEXT NOT NULL,
    user_agent TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (org_id, user_id, id)
);

-- Push is the deliveries' third channel.
-- engine-specific: Postgres changes a CHECK in place.
ALTER TABLE notify_deliveries DROP CONSTRAINT notify_deliveries_channel_check;
-- engine-specific: Postgres changes a CHECK in place.
ALTER TABLE notify_deliveries ADD CONSTRAINT notify_deliveries_channel_check CHECK (channel IN ('email', 'webhook', 'push'));
