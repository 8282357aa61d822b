-- Notifications (package notify). An event is queued in notify_events in the
-- transaction of the change that causes it, due at due_at (now, or later for
-- a reminder); a worker expands it, once, into one delivery per destination
-- (an email address, a webhook) that the person's settings choose, and sends
-- each delivery, retrying with backoff; a delivery is claimed with a lease
-- (lease_until) that a second worker cannot take until it expires, so a
-- worker killed mid-send leaves it to be sent again (at least once) and two
-- workers never send it at the same time. subject groups the events of one
-- question (threading, and the reminders a resolution cancels).
CREATE TABLE notify_events (
    id          TEXT NOT NULL PRIMARY KEY,
    org_id      TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    kind        TEXT NOT NULL,
    subject     TEXT NOT NULL DEFAULT '',
    actor_id    TEXT NOT NULL DEFAULT '',
    body        TEXT NOT NULL DEFAULT '',
    link        TEXT NOT NULL DEFAULT '',
    urgent      BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  TIMESTAMP NOT NULL,
    due_at      TIMESTAMP NOT NULL,
    lease_until TIMESTAMP,
    claim       TEXT NOT NULL DEFAULT '',
    expanded_at TIMESTAMP
);
CREATE INDEX notify_events_due ON notify_events (due_at) WHERE expanded_at IS NULL;
CREATE INDEX notify_events_subject ON notify_events (org_id, subject) WHERE expanded_at IS NULL;

CREATE TABLE notify_deliveries (
    id           TEXT NOT NULL PRIMARY KEY,
    event_id     TEXT NOT NULL REFERENCES notify_events (id) ON DELETE CASCADE,
    org_id       TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    channel      TEXT NOT NULL CHECK (channel IN ('email', 'webhook')),
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
CREATE INDEX notify_deliveries_due ON notify_deliveries (next_at) WHERE status = 'pending';
CREATE INDEX notify_deliveries_user ON notify_deliveries (org_id, user_id, created_at);

-- A webhook of a person (user_id set) or of the whole org (user_id empty,
-- added by an admin). secret is the whsec_ signing key itself: signing needs
-- it, so it cannot be stored hashed; no read of the package returns it after
-- the call that creates it. failing_since marks the first failure of a run
-- of failures; created_by, told when it is disabled, is the person or the
-- admin who added it; a webhook failing for 24 hours, or answered 410, is disabled.
CREATE TABLE notify_webhooks (
    org_id          TEXT NOT NULL,
    id              TEXT NOT NULL,
    user_id         TEXT NOT NULL DEFAULT '',
    created_by      TEXT NOT NULL,
    url             TEXT NOT NULL,
    format          TEXT NOT NULL CHECK (format IN ('json', 'slack', 'teams')),
    secret          TEXT NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    failing_since   TIMESTAMP,
    disabled_at     TIMESTAMP,
    disabled_reason TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (org_id, id)
);
CREATE INDEX notify_webhooks_user ON notify_webhooks (org_id, user_id);

-- A person's notification settings; no row means the defaults. channels is
-- a JSON object from event kind to the channels it goes to; quiet hours are
-- minutes after midnight in time_zone (start = end means none).
CREATE TABLE notify_settings (
    org_id          TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    channels        TEXT NOT NULL DEFAULT '{}',
    paused          BOOLEAN NOT NULL DEFAULT FALSE,
    quiet_start     INTEGER NOT NULL DEFAULT 0,
    quiet_end       INTEGER NOT NULL DEFAULT 0,
    time_zone       TEXT NOT NULL DEFAULT 'UTC',
    urgent_in_quiet BOOLEAN NOT NULL DEFAULT FALSE,
    updated_at      TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, user_id)
);

-- An org's notification settings; no row means the defaults: how much of
-- the text a notification carries ('full', 'first_line', 'none') and how
-- long a question waits before its recipient is reminded.
CREATE TABLE notify_org_settings (
    org_id           TEXT NOT NULL PRIMARY KEY,
    text_mode        TEXT NOT NULL DEFAULT 'first_line' CHECK (text_mode IN ('full', 'first_line', 'none')),
    reminder_seconds INTEGER NOT NULL DEFAULT 14400,
    updated_at       TIMESTAMP NOT NULL
);

-- The server's key for the signed one-click unsubscribe links, made at the
-- first start and shared by every replica.
CREATE TABLE notify_keys (
    name       TEXT NOT NULL PRIMARY KEY,
    secret     TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
