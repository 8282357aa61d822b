DELETE FROM notify_keys WHERE name = 'vapid';
DROP TABLE notify_push_subscriptions;
-- engine-specific: Postgres changes a CHECK in place, once the push deliveries are gone.
DELETE FROM notify_deliveries WHERE channel = 'push';
-- engine-specific: Postgres changes a CHECK in place.
ALTER TABLE notify_deliveries DROP CONSTRAINT notify_deliveries_channel_check;
-- engine-specific: Postgres changes a CHECK in place.
ALTER TABLE notify_deliveries ADD CONSTRAINT notify_deliveries_channel_check CHECK (channel IN ('email', 'webhook'));
