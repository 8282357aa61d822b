-- Channels: group conversations inside an organization. A channel's name is
-- its slug, unique in the org. last_seq numbers its messages: a post takes
-- the next number while it holds the channel's row, so within a channel the
-- numbers commit in order and a reader's "after seq" cursor never skips one.
CREATE TABLE channels (
    org_id          TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    private         BOOLEAN NOT NULL DEFAULT FALSE,
    topic           TEXT NOT NULL DEFAULT '',
    description     TEXT NOT NULL DEFAULT '',
    created_by      TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    archived_at     TIMESTAMPTZ,
    last_seq        BIGINT NOT NULL DEFAULT 0,
    last_message_at TIMESTAMPTZ,
    PRIMARY KEY (org_id, name)
);

-- A member's read_seq is their durable read cursor: the unread count is the
-- channel's last_seq minus it.
CREATE TABLE channel_members (
    org_id    TEXT NOT NULL,
    channel   TEXT NOT NULL,
    user_id   TEXT NOT NULL,
    joined_at TIMESTAMPTZ NOT NULL,
    read_seq  BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, channel, user_id),
    FOREIGN KEY (org_id, channel) REFERENCES channels (org_id, name) ON DELETE CASCADE,
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);
CREATE INDEX channel_members_user ON channel_members (org_id, user_id);

CREATE TABLE channel_messages (
    org_id     TEXT NOT NULL,
    channel    TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    id         TEXT NOT NULL,
    author_id  TEXT NOT NULL,
    by_agent   BOOLEAN NOT NULL,
    kind       TEXT NOT NULL DEFAULT '',
    priority   TEXT NOT NULL DEFAULT 'normal' CHECK (priority IN ('normal', 'high', 'urgent')),
    body       TEXT NOT NULL,
    reply_to   TEXT,
    mentions   TEXT NOT NULL DEFAULT '[]',
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (org_id, channel, seq),
    FOREIGN KEY (org_id, channel) REFERENCES channels (org_id, name) ON DELETE CASCADE,
    FOREIGN KEY (org_id, author_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX channel_messages_id ON channel_messages (org_id, id);
CREATE INDEX channel_messages_author ON channel_messages (org_id, author_id, created_at);

-- engine-specific: Postgres full-text search reads a stored tsvector, where
-- SQLite keeps an FTS5 table.
ALTER TABLE channel_messages ADD COLUMN search tsvector
    GENERATED ALWAYS AS (to_tsvector('english', body)) STORED;

-- engine-specific: a GIN index over the tsvector, which SQLite does not have.
CREATE INDEX channel_messages_search ON channel_messages USING GIN (search);
