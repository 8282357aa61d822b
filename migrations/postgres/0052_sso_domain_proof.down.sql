-- Back to a domain per org, first come: only the verified domains, which
-- are one org's each. Postgres changes the table in place, SQLite rebuilds
-- it.
-- engine-specific: Postgres changes sso_domains in place.
DELETE FROM sso_domains WHERE verified_at IS NULL
    OR NOT EXISTS (SELECT 1 FROM sso_providers p WHERE p.org_id = sso_domains.org_id);
-- engine-specific: Postgres drops the indexes (SQLite's go with the table).
DROP INDEX sso_domains_verified;
-- engine-specific: Postgres drops the indexes (SQLite's go with the table).
DROP INDEX sso_domains_org_domain;
-- engine-specific: Postgres changes sso_domains in place.
ALTER TABLE sso_domains DROP CONSTRAINT sso_domains_pkey, ADD COLUMN provider_id TEXT;
-- engine-specific: Postgres changes sso_domains in place.
UPDATE sso_domains d SET provider_id = p.id FROM sso_providers p WHERE p.org_id = d.org_id;
-- engine-specific: Postgres changes sso_domains in place.
ALTER TABLE sso_domains ALTER COLUMN provider_id SET NOT NULL, DROP COLUMN id, DROP COLUMN token, DROP COLUMN added_by,
    DROP COLUMN added_at, DROP COLUMN verified_at, DROP COLUMN verified_by, ADD PRIMARY KEY (domain);
CREATE INDEX sso_domains_org ON sso_domains (org_id);
