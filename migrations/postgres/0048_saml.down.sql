DROP TABLE sso_assertions;
DELETE FROM sso_identities WHERE provider_id IN (SELECT id FROM sso_providers WHERE kind = 'saml');
DELETE FROM sso_domains WHERE provider_id IN (SELECT id FROM sso_providers WHERE kind = 'saml');
DELETE FROM sso_states WHERE provider_id IN (SELECT id FROM sso_providers WHERE kind = 'saml');
-- engine-specific: Postgres deletes the SAML providers, then changes its CHECK and drops columns in place.
DELETE FROM sso_providers WHERE kind = 'saml';
-- engine-specific: Postgres deletes the SAML providers, then changes its CHECK and drops columns in place.
ALTER TABLE sso_providers DROP COLUMN idp_metadata, DROP COLUMN metadata_url, DROP COLUMN sp_key, DROP COLUMN sp_cert;
-- engine-specific: Postgres deletes the SAML providers, then changes its CHECK and drops columns in place.
ALTER TABLE sso_providers DROP CONSTRAINT sso_providers_kind_check;
-- engine-specific: Postgres deletes the SAML providers, then changes its CHECK and drops columns in place.
ALTER TABLE sso_providers ADD CONSTRAINT sso_providers_kind_check CHECK (kind IN ('oidc'));
