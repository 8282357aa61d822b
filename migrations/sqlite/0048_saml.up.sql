-- SAML 2.0 beside OpenID Connect (package sso). sso_providers takes the
-- kind 'saml': issuer is then the identity provider's entity ID,
-- client_id and client_secret are empty, idp_metadata is the provider's
-- metadata as the admin pasted it or as metadata_url gave it, and sp_key
-- and sp_cert are the org's own key pair as a service provider, made when
-- SAML is first set up: the key signs ctalk's AuthnRequests and is never
-- shown, logged or audited; the certificate is in the org's SP metadata.
-- SQLite cannot change a CHECK constraint, so the table is made anew.

-- engine-specific: SQLite changes a CHECK and adds columns by rebuilding the table.
CREATE TABLE sso_providers_new (
    id            TEXT NOT NULL PRIMARY KEY,
    org_id        TEXT NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('oidc', 'saml')),
    issuer        TEXT NOT NULL,
    client_id     TEXT NOT NULL,
    client_secret TEXT NOT NULL,
    jit           BOOLEAN NOT NULL DEFAULT FALSE,
    link_by_email BOOLEAN NOT NULL DEFAULT FALSE,
    required      BOOLEAN NOT NULL DEFAULT FALSE,
    tested_at     TIMESTAMP,
    tested_by     TEXT NOT NULL DEFAULT '',
    updated_by    TEXT NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    idp_metadata  TEXT NOT NULL DEFAULT '',
    metadata_url  TEXT NOT NULL DEFAULT '',
    sp_key        TEXT NOT NULL DEFAULT '',
    sp_cert       TEXT NOT NULL DEFAULT ''
);
-- engine-specific: SQLite changes a CHECK and adds columns by rebuilding the table.
INSERT INTO sso_providers_new (id, org_id, kind, issuer, client_id, client_secret, jit, link_by_email, required, tested_at, tested_by, updated_by, updated_at)
    SELECT id, org_id, kind, issuer, client_id, client_secret, jit, link_by_email, required, tested_at, tested_by, updated_by, updated_at FROM sso_providers;
-- engine-specific: SQLite changes a CHECK and adds columns by rebuilding the table.
DROP TABLE sso_providers;
-- engine-specific: SQLite changes a CHECK and adds columns by rebuilding the table.
ALTER TABLE sso_providers_new RENAME TO sso_providers;
-- engine-specific: SQLite changes a CHECK and adds columns by rebuilding the table.
CREATE UNIQUE INDEX sso_providers_org ON sso_providers (org_id);

-- The SAML assertions accepted, each once: the hash of the assertion's
-- ID, kept until the assertion could no longer be accepted anyway.
CREATE TABLE sso_assertions (
    org_id     TEXT NOT NULL,
    id_hash    TEXT NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, id_hash)
);
CREATE INDEX sso_assertions_expires ON sso_assertions (expires_at);
