-- Email domains proven by DNS (package sso). An admin adds a domain,
-- pending, with a random token; ctalk counts it only once it found the TXT
-- record "ctalk-verification=TOKEN" at _ctalk.DOMAIN (verified_at). Only
-- verified domains send people to the org's provider and vouch for the
-- addresses linked by email or made members just in time. Several orgs may
-- have one domain pending, one alone verified (the partial unique index),
-- so that nobody can hold a domain that is not theirs by listing it first.
-- A domain belongs to the org, whichever provider it has. Domains listed
-- before proof was asked for are kept, pending: they were never proven.
--
-- Postgres changes the table in place, so that what is set on it stays
-- (such as row-level security); SQLite rebuilds it.
-- engine-specific: SQLite rebuilds sso_domains.
CREATE TABLE sso_domains_proven (
    org_id      TEXT NOT NULL,
    id          TEXT NOT NULL,
    domain      TEXT NOT NULL,
    token       TEXT NOT NULL,
    added_by    TEXT NOT NULL,
    added_at    TIMESTAMP NOT NULL,
    verified_at TIMESTAMP,
    verified_by TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (org_id, id)
);
-- engine-specific: SQLite makes random ids and tokens with randomblob().
INSERT INTO sso_domains_proven (org_id, id, domain, token, added_by, added_at)
    SELECT d.org_id, 'dom_' || lower(hex(randomblob(12))), d.domain, lower(hex(randomblob(16))), p.updated_by, p.updated_at
    FROM sso_domains d JOIN sso_providers p ON p.org_id = d.org_id;
-- engine-specific: SQLite rebuilds sso_domains.
DROP TABLE sso_domains;
-- engine-specific: SQLite rebuilds sso_domains.
ALTER TABLE sso_domains_proven RENAME TO sso_domains;
CREATE UNIQUE INDEX sso_domains_org_domain ON sso_domains (org_id, domain);
CREATE UNIQUE INDEX sso_domains_verified ON sso_domains (domain) WHERE verified_at IS NOT NULL;
