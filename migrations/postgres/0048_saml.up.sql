-- SAML 2.0 beside OpenID Connect (package sso). sso_providers takes the
-- kind 'saml': issuer is then the identity provider's entity ID,
-- client_id and client_secret are empty, idp_metadata is the provider's
-- metadata as the admin pasted it or as metadata_url gave it, and sp_key
-- and sp_cert are the org's own key pair as a service provider, made when
-- SAML is first set up: the key signs ctalk's AuthnRequests and is never
-- shown, logged or audited; the certificate is in the org's SP metadata.

-- engine-specific: Postgres changes a CHECK and adds columns in place.
ALTER TABLE sso_providers DROP CONSTRAINT sso_providers_kind_check;
-- engine-specific: Postgres changes a CHECK and adds columns in place.
ALTER TABLE sso_providers ADD CONSTRAINT sso_providers_kind_check CHECK (kind IN ('oidc', 'saml'));
-- engine-specific: Postgres changes a CHECK and adds columns in place.
ALTER TABLE sso_providers
    ADD COLUMN idp_metadata TEXT NOT NULL DEFAULT '',
    ADD COLUMN metadata_url TEXT NOT NULL DEFAULT '',
    ADD COLUMN sp_key       TEXT NOT NULL DEFAULT '',
    ADD COLUMN sp_cert      TEXT NOT NULL DEFAULT '';

-- The SAML assertions accepted, each once: the hash of the assertion's
-- ID, kept until the assertion could no longer be accepted anyway.
CREATE TABLE sso_assertions (
    org_id     TEXT NOT NULL,
    id_hash    TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (org_id, id_hash)
);
CREATE INDEX sso_assertions_expires ON sso_assertions (expires_at);
