-- engine-specific: the tsvector of questions that Postgres's search reads.
ALTER TABLE questions DROP COLUMN IF EXISTS search;
DROP TABLE IF EXISTS presence_waits;
ALTER TABLE users DROP COLUMN last_seen_at;
DROP TABLE IF EXISTS channel_subscriptions;
DROP TABLE IF EXISTS channel_alerts;
