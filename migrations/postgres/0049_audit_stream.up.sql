-- Each org's stream of its audit log to a SIEM (package notify): the URL
-- an admin set and its signing secret (whsec_, as notify_webhooks keeps
-- theirs: it signs every request, so it cannot be stored hashed, and no
-- read returns it after the call that made it), and the cursor: seq is the
-- last event of the org's audit chain the receiver took with a 2xx. One
-- replica at a time delivers an org's stream, the claim's while lease_until
-- lasts; a failed request is tried again at next_at, with backoff, from
-- the same cursor. last_* and failing_since are what the admin is shown.
CREATE TABLE notify_audit_streams (
    org_id        TEXT NOT NULL PRIMARY KEY,
    url           TEXT NOT NULL,
    secret        TEXT NOT NULL,
    created_by    TEXT NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    seq           BIGINT NOT NULL,
    next_at       TIMESTAMPTZ NOT NULL,
    lease_until   TIMESTAMPTZ,
    claim         TEXT NOT NULL DEFAULT '',
    attempts      INTEGER NOT NULL DEFAULT 0,
    last_at       TIMESTAMPTZ,
    last_ok_at    TIMESTAMPTZ,
    last_error    TEXT NOT NULL DEFAULT '',
    failing_since TIMESTAMPTZ
);
