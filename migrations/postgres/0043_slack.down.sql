DROP TABLE slack_payloads;
DROP TABLE slack_messages;
DROP TABLE slack_link_confirmations;
DROP TABLE slack_links;
DROP TABLE slack_apps;
-- engine-specific: Postgres deletes the Slack deliveries before its CHECK drops slack.
DELETE FROM notify_deliveries WHERE channel = 'slack';
-- engine-specific: Postgres changes a CHECK in place.
ALTER TABLE notify_deliveries DROP CONSTRAINT notify_deliveries_channel_check;
-- engine-specific: Postgres changes a CHECK in place.
ALTER TABLE notify_deliveries ADD CONSTRAINT notify_deliveries_channel_check CHECK (channel IN ('email', 'webhook', 'push'));
