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
    updated_at     TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX slack_apps_team ON slack_apps (team_id);

-- A person's Slack user, linked once they opened the link the app sent
-- them in Slack while signed in to ctalk as themselves.
CREATE TABLE slack_links (
    org_id        TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    team_id       TEXT NOT NULL,
    slack_user_id TEXT NOT NULL,
    linked_at     TIMESTAMPTZ NOT NULL,
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
    created_at    TIMESTAMPTZ NOT NULL,
    expires_at    TIMESTAMPTZ NOT NULL
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
    created_at TIMESTAMPTZ NOT NULL,
    settled_at TIMESTAMPTZ,
    PRIMARY KEY (org_id, event_id)
);
CREATE INDEX slack_messages_question ON slack_messages (org_id, message_id);
CREATE INDEX slack_messages_ts ON slack_messages (org_id, channel_id, ts);

-- The signed payloads Slack sent that were accepted, by id, each once;
-- rows older than the signatures' 5 minutes are pruned.
CREATE TABLE slack_payloads (
    id          TEXT NOT NULL PRIMARY KEY,
    received_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX slack_payloads_received ON slack_payloads (received_at);

-- Slack is the deliveries' fourth channel.
-- engine-specific: Postgres changes a CHECK in place.
ALTER TABLE notify_deliveries DROP CONSTRAINT notify_deliveries_channel_check;
-- engine-specific: Postgres changes a CHECK in place.
ALTER TABLE notify_deliveries ADD CONSTRAINT notify_deliveries_channel_check CHECK (channel IN ('email', 'webhook', 'push', 'slack'));
