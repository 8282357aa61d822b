-- Email domains proven by DNS (package sso). An admin adds a domain,
-- pending, with a random token; ctalk counts it only once it found the TXT
-- record "ctalk-verification=TOKEN" at _ctalk.DOMAIN (verified_at). Only
-- verified domains send people to the org's provider and vouch for the
-- addresses linked by email or made members just in time. Several orgs may
-- have one domain pending, one alone verified (the partial unique index),
-- so that nobody can hold a domain that is not theirs by listing it first.
-- A domain belongs to the org, whichever provider it has.
CREATE TABLE sso_domains_proven (
    org_id      TEXT NOT NULL,
    id          TEXT NOT NULL,
    domain      TEXT NOT NULL,
    token       TEXT NOT NULL,
    added_by    TEXT NOT NULL,
    added_at    TIMESTAMPTZ NOT NULL,
    verified_at TIMESTAMPTZ,
    verified_by TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (org_id, id)
);
-- Domains listed before proof was asked for are kept, pending: they were
-- never proven.
-- engine-specific: Postgres makes random ids and tokens with gen_random_uuid().
INSERT INTO sso_domains_proven (org_id, id, domain, token, added_by, added_at)
    SELECT d.org_id, 'dom_' || replace(gen_random_uuid()::text, '-', ''), d.domain, replace(gen_random_uuid()::text, '-', ''), p.updated_by, p.updated_at
    FROM sso_domains d JOIN sso_providers p ON p.org_id = d.org_id;
DROP TABLE sso_domains;
ALTER TABLE sso_domains_proven RENAME TO sso_domains;
CREATE UNIQUE INDEX sso_domains_org_domain ON sso_domains (org_id, domain);
CREATE UNIQUE INDEX sso_domains_verified ON sso_domains (domain) WHERE verified_at IS NOT NULL;
