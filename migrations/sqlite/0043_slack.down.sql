DROP TABLE slack_payloads;
DROP TABLE slack_messages;
DROP TABLE slack_link_confirmations;
DROP TABLE slack_links;
DROP TABLE slack_apps;
-- engine-specific: SQLite changes a CHECK by rebuilding the table.
CREATE TABLE notify_deliveries_new (
    id           TEXT NOT NULL PRIMARY KEY,
    event_id     TEXT NOT NULL REFERENCES notify_events (id) ON DELETE CASCADE,
    org_id       TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    channel      TEXT NOT NULL CHECK (channel IN ('email', 'webhook', 'push')),
    target       TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_at      TIMESTAMP NOT NULL,
    lease_until  TIMESTAMP,
    claim        TEXT NOT NULL DEFAULT '',
    last_error   TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMP NOT NULL,
    finished_at  TIMESTAMP
);
-- engine-specific: SQLite changes a CHECK by rebuilding the table.
INSERT INTO notify_deliveries_new SELECT id, event_id, org_id, user_id, channel, target, status, attempts, next_at, lease_until, claim, last_error, created_at, finished_at FROM notify_deliveries WHERE channel <> 'slack';
-- engine-specific: SQLite changes a CHECK by rebuilding the table.
DROP TABLE notify_deliveries;
-- engine-specific: SQLite changes a CHECK by rebuilding the table.
ALTER TABLE notify_deliveries_new RENAME TO notify_deliveries;
-- engine-specific: SQLite changes a CHECK by rebuilding the table.
CREATE INDEX notify_deliveries_due ON notify_deliveries (next_at) WHERE status = 'pending';
-- engine-specific: SQLite changes a CHECK by rebuilding the table.
CREATE INDEX notify_deliveries_user ON notify_deliveries (org_id, user_id, created_at);
-- engine-specific: SQLite changes a CHECK by rebuilding the table.
CREATE INDEX notify_deliveries_created ON notify_deliveries (org_id, created_at);
-- engine-specific: SQLite changes a CHECK by rebuilding the table.
CREATE INDEX notify_deliveries_mailed ON notify_deliveries (org_id, user_id, target, finished_at)
    WHERE channel = 'email' AND status = 'sent';
