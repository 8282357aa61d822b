-- A channel alert is a mention of a member, an @channel or an urgent post,
-- waiting to be handed to the member's wait_for_inbox or check_inbox. The
-- row is the durable "not yet handed" mark: handing an alert over deletes
-- it, in the same statement that reads it, so that two waits (on one replica
-- or two) never both hand it over, and a restart loses none. Leaving the
-- channel drops the member's alerts of it.
CREATE TABLE channel_alerts (
    org_id     TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    channel    TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, user_id, channel, seq),
    FOREIGN KEY (org_id, channel, user_id) REFERENCES channel_members (org_id, channel, user_id) ON DELETE CASCADE
);
CREATE INDEX channel_alerts_channel_user ON channel_alerts (org_id, channel, user_id);

-- A channel subscription: an MCP session (of the session era) that asked,
-- with resources/subscribe, for notifications/resources/updated when a
-- channel gets a message. It is kept in the database because the session's
-- event stream (GET /mcp) may be held by another replica than the one its
-- subscribe request reached. Leaving the channel drops it.
CREATE TABLE channel_subscriptions (
    org_id     TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    session_id TEXT NOT NULL,
    channel    TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, user_id, session_id, channel),
    FOREIGN KEY (org_id, channel, user_id) REFERENCES channel_members (org_id, channel, user_id) ON DELETE CASCADE
);
CREATE INDEX channel_subscriptions_member ON channel_subscriptions (org_id, channel, user_id);

-- Presence. last_seen_at is the time of the user's last call, written at
-- most once a minute. A presence_waits row says that an agent of the user is
-- blocked in a wait on one replica: each replica keeps its own row per user
-- (so one replica's wait ending never hides another's), refreshes its
-- "until" while the wait lasts, and deletes the row when its last wait for
-- the user ends; a replica that dies leaves a row that expires by itself.
ALTER TABLE users ADD COLUMN last_seen_at TIMESTAMP;

CREATE TABLE presence_waits (
    org_id     TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    replica    TEXT NOT NULL,
    wait_until TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, user_id, replica),
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);

-- engine-specific: SQLite searches questions and answers through an FTS5
-- table over their bodies and resolutions, where Postgres keeps a tsvector.
CREATE VIRTUAL TABLE questions_fts USING fts5(
    body, resolution, content='questions', content_rowid='rowid', tokenize='porter unicode61'
);

-- engine-specific: indexes the questions stored before this migration.
INSERT INTO questions_fts (questions_fts) VALUES ('rebuild');

-- engine-specific: keeps the FTS5 table in step with new questions.
CREATE TRIGGER questions_fts_insert AFTER INSERT ON questions BEGIN
    INSERT INTO questions_fts (rowid, body, resolution) VALUES (new.rowid, new.body, COALESCE(new.resolution, ''));
-- engine-specific: the end of the SQLite trigger above.
END;

-- engine-specific: keeps the FTS5 table in step with answers and declines.
CREATE TRIGGER questions_fts_update AFTER UPDATE OF body, resolution ON questions BEGIN
    INSERT INTO questions_fts (questions_fts, rowid, body, resolution) VALUES ('delete', old.rowid, old.body, COALESCE(old.resolution, ''));
    -- engine-specific: the second statement of the SQLite trigger above.
    INSERT INTO questions_fts (rowid, body, resolution) VALUES (new.rowid, new.body, COALESCE(new.resolution, ''));
-- engine-specific: the end of the SQLite trigger above.
END;

-- engine-specific: keeps the FTS5 table in step with deleted questions.
CREATE TRIGGER questions_fts_delete AFTER DELETE ON questions BEGIN
    INSERT INTO questions_fts (questions_fts, rowid, body, resolution) VALUES ('delete', old.rowid, old.body, COALESCE(old.resolution, ''));
-- engine-specific: the end of the SQLite trigger above.
END;
