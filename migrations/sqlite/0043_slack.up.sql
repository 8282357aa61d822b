-- Decide in Slack (package slackapp). An organization connects one Slack
-- app: its workspace (team_id, read from auth.test when the token is
-- saved), the bot's user, and the two secrets, bot_token and
-- signing_secret, which ctalk must use as they are and so keeps as they
-- are: never shown again, logged or audited. One org per workspace.
CREATE TABLE slack_apps (
    org_id         TEXT NOT NULL PRIMARY KEY,
    team_id        TEXT NOT NULL,
    bot_user_id    TEXT NOT NULL DEFAULT '',
    bot_token      TEXT NOT NULL,
    signing_secret TEXT NOT NULL,
    updated_by     TEXT NOT NULL,
    updated_at     TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX slack_apps_team ON slack_apps (team_id);

-- A person's Slack user, linked once they opened the link the app sent
-- them in Slack while signed in to ctalk as themselves.
CREATE TABLE slack_links (
    org_id        TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    team_id       TEXT NOT NULL,
    slack_user_id TEXT NOT NULL,
    linked_at     TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, user_id)
);
CREATE UNIQUE INDEX slack_links_slack_user ON slack_links (team_id, slack_user_id);

-- A link waiting for its confirmation: the hash of the single-use token
-- sent in the DM, valid until expires_at.
CREATE TABLE slack_link_confirmations (
    token_hash    TEXT NOT NULL PRIMARY KEY,
    org_id        TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    team_id       TEXT NOT NULL,
    slack_user_id TEXT NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    expires_at    TIMESTAMP NOT NULL
);
CREATE INDEX slack_link_confirmations_user ON slack_link_confirmations (org_id, user_id, created_at);

-- The DMs sent for a question's notifications (one per notification
-- event: a retried delivery finds its message here and sends none), so
-- that they are updated once the question is decided.
CREATE TABLE slack_messages (
    org_id     TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    message_id TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    ts         TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    settled_at TIMESTAMP,
    PRIMARY KEY (org_id, event_id)
);
CREATE INDEX slack_messages_question ON slack_messages (org_id, message_id);
CREATE INDEX slack_messages_ts ON slack_messages (org_id, channel_id, ts);

-- The signed payloads Slack sent that were accepted, by id, each once;
-- rows older than the signatures' 5 minutes are pruned.
CREATE TABLE slack_payloads (
    id          TEXT NOT NULL PRIMARY KEY,
    received_at TIMESTAMP NOT NULL
);
CREATE INDEX slack_payloads_received ON slack_payloads (received_at);

-- Slack is the deliveries' fourth channel.
-- engine-specific: SQLite changes a CHECK by rebuilding the table.
CREATE TABLE notify_deliveries_new (
    id           TEXT NOT NULL PRIMARY KEY,
    event_id     TEXT NOT NULL REFERENCES notify_events (id) ON DELETE CASCADE,
    org_id       TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    channel      TEXT NOT NULL CHECK (channel IN ('email', 'webhook', 'push', 'slack')),
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
INSERT INTO notify_deliveries_new SELECT id, event_id, org_id, user_id, channel, target, status, attempts, next_at, lease_until, claim, last_error, created_at, finished_at FROM notify_deliveries;
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
