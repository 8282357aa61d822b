-- engine-specific: the FTS5 table of questions that SQLite's search reads.
DROP TABLE IF EXISTS questions_fts;
-- engine-specific: its triggers.
DROP TRIGGER IF EXISTS questions_fts_insert;
-- engine-specific: its triggers.
DROP TRIGGER IF EXISTS questions_fts_update;
-- engine-specific: its triggers.
DROP TRIGGER IF EXISTS questions_fts_delete;
DROP TABLE IF EXISTS presence_waits;
ALTER TABLE users DROP COLUMN last_seen_at;
DROP TABLE IF EXISTS channel_subscriptions;
DROP TABLE IF EXISTS channel_alerts;
