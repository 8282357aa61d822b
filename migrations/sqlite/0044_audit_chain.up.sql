-- Each org's audit events form a hash chain (audit/chain.go): seq numbers
-- them from 1 within the org in the order they were written, and hash is
-- SHA-256 over the previous event's hash and the event's fields. Events
-- written before the chain began keep seq 0 and no hash.
ALTER TABLE audit_events ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE audit_events ADD COLUMN hash TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX audit_events_chain ON audit_events (org_id, seq) WHERE seq > 0;

-- One row per org with audit events: how long they are kept (NULL: the
-- server's AUDIT_RETENTION_DAYS), the head of its chain (the last seq and
-- hash), which each batch locks while it extends the chain, and the
-- checkpoint that pruning leaves (the last pruned event's seq and hash,
-- signed with a key of the server's).
CREATE TABLE audit_orgs (
    org_id         TEXT PRIMARY KEY,
    retention_days INTEGER,
    seq            BIGINT NOT NULL DEFAULT 0,
    hash           TEXT NOT NULL DEFAULT '',
    pruned_seq     BIGINT NOT NULL DEFAULT 0,
    pruned_hash    TEXT NOT NULL DEFAULT '',
    pruned_at      TIMESTAMP,
    pruned_sig     TEXT NOT NULL DEFAULT ''
);
INSERT INTO audit_orgs (org_id) SELECT DISTINCT org_id FROM audit_events;

-- The server's secret that the checkpoints' signing key is derived from,
-- made at the first start; never shown.
CREATE TABLE audit_keys (
    name       TEXT PRIMARY KEY,
    secret     TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
