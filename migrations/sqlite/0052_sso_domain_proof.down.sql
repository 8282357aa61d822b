-- Back to a domain per org, first come: only the verified domains, which
-- are one org's each. Postgres changes the table in place, SQLite rebuilds
-- it.
-- engine-specific: SQLite rebuilds sso_domains.
CREATE TABLE sso_domains_listed (
    domain      TEXT NOT NULL PRIMARY KEY,
    org_id      TEXT NOT NULL,
    provider_id TEXT NOT NULL
);
-- engine-specific: SQLite rebuilds sso_domains.
INSERT INTO sso_domains_listed (domain, org_id, provider_id)
    SELECT d.domain, d.org_id, p.id FROM sso_domains d JOIN sso_providers p ON p.org_id = d.org_id
    WHERE d.verified_at IS NOT NULL;
-- engine-specific: SQLite rebuilds sso_domains.
DROP TABLE sso_domains;
-- engine-specific: SQLite rebuilds sso_domains.
ALTER TABLE sso_domains_listed RENAME TO sso_domains;
CREATE INDEX sso_domains_org ON sso_domains (org_id);
