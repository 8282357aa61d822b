-- An org may hold its agents' channel posts for their person's approval
-- (channel_post_mode 'human'), as approval_mode holds answers; 'agent', the
-- default, posts them at once, labelled as posted by the agent.
ALTER TABLE orgs ADD COLUMN channel_post_mode TEXT NOT NULL DEFAULT 'agent';

-- approved_at marks a message its author approved, in the web app, before
-- it was published: posted by their agent, approved by them.
ALTER TABLE channel_messages ADD COLUMN approved_at TIMESTAMP;

-- A channel post an agent made in human mode, held until its person (the
-- author) approves, edits or rejects it. Held posts live apart from
-- channel_messages, so that no read of a channel (messages, unread counts,
-- search, alerts, resources) can see them, and messages keep numbers
-- without gaps. A decision sets status once (a conditional update: two
-- decisions at once have one outcome), with the person's note (a rejection)
-- or text (an edit); reported_at marks the decision as
-- handed to the agent (check_inbox, wait_for_inbox).
CREATE TABLE channel_posts (
    org_id      TEXT NOT NULL,
    id          TEXT NOT NULL,
    channel     TEXT NOT NULL,
    author_id   TEXT NOT NULL,
    kind        TEXT NOT NULL DEFAULT '',
    priority    TEXT NOT NULL DEFAULT 'normal' CHECK (priority IN ('normal', 'high', 'urgent')),
    body        TEXT NOT NULL,
    reply_to    TEXT,
    created_at  TIMESTAMP NOT NULL,
    status      TEXT NOT NULL DEFAULT 'pending_approval' CHECK (status IN ('pending_approval', 'approved', 'edited', 'rejected')),
    decided_at  TIMESTAMP,
    note        TEXT NOT NULL DEFAULT '',
    edited_body TEXT,
    message_id  TEXT,
    seq         BIGINT,
    reported_at TIMESTAMP,
    PRIMARY KEY (org_id, id),
    FOREIGN KEY (org_id, channel) REFERENCES channels (org_id, name) ON DELETE CASCADE,
    FOREIGN KEY (org_id, author_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);
CREATE INDEX channel_posts_author ON channel_posts (org_id, author_id, status, created_at);
CREATE INDEX channel_posts_unreported ON channel_posts (org_id, author_id, decided_at) WHERE reported_at IS NULL AND decided_at IS NOT NULL;
