DROP TABLE sso_assertions;
DELETE FROM sso_identities WHERE provider_id IN (SELECT id FROM sso_providers WHERE kind = 'saml');
DELETE FROM sso_domains WHERE provider_id IN (SELECT id FROM sso_providers WHERE kind = 'saml');
DELETE FROM sso_states WHERE provider_id IN (SELECT id FROM sso_providers WHERE kind = 'saml');
-- engine-specific: SQLite changes a CHECK and drops columns by rebuilding the table.
CREATE TABLE sso_providers_old (
    id            TEXT NOT NULL PRIMARY KEY,
    org_id        TEXT NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('oidc')),
    issuer        TEXT NOT NULL,
    client_id     TEXT NOT NULL,
    client_secret TEXT NOT NULL,
    jit           BOOLEAN NOT NULL DEFAULT FALSE,
    link_by_email BOOLEAN NOT NULL DEFAULT FALSE,
    required      BOOLEAN NOT NULL DEFAULT FALSE,
    tested_at     TIMESTAMP,
    tested_by     TEXT NOT NULL DEFAULT '',
    updated_by    TEXT NOT NULL,
    updated_at    TIMESTAMP NOT NULL
);
-- engine-specific: SQLite changes a CHECK and drops columns by rebuilding the table.
INSERT INTO sso_providers_old (id, org_id, kind, issuer, client_id, client_secret, jit, link_by_email, required, tested_at, tested_by, updated_by, updated_at)
    SELECT id, org_id, kind, issuer, client_id, client_secret, jit, link_by_email, required, tested_at, tested_by, updated_by, updated_at FROM sso_providers WHERE kind = 'oidc';
-- engine-specific: SQLite changes a CHECK and drops columns by rebuilding the table.
DROP TABLE sso_providers;
-- engine-specific: SQLite changes a CHECK and drops columns by rebuilding the table.
ALTER TABLE sso_providers_old RENAME TO sso_providers;
-- engine-specific: SQLite changes a CHECK and drops columns by rebuilding the table.
CREATE UNIQUE INDEX sso_providers_org ON sso_providers (org_id);
