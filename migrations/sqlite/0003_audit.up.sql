-- One row per tool call: who, which tool, the outcome and how long it took,
-- and the ids it touched. Never arguments, message text, passwords or tokens.
CREATE TABLE audit_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          TIMESTAMP NOT NULL,
    org_id      TEXT NOT NULL DEFAULT '',
    user_id     TEXT NOT NULL DEFAULT '',
    tool        TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    duration_ms DOUBLE PRECISION NOT NULL,
    ids         TEXT NOT NULL DEFAULT '[]',
    request_id  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_events_org ON audit_events (org_id, id);
CREATE INDEX audit_events_at ON audit_events (at);
