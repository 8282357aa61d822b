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
-- engine-specific: Postgres changes sso_domains in place.
ALTER TABLE sso_domains DROP CONSTRAINT sso_domains_pkey,
    ADD COLUMN id TEXT, ADD COLUMN token TEXT, ADD COLUMN added_by TEXT, ADD COLUMN added_at TIMESTAMPTZ,
    ADD COLUMN verified_at TIMESTAMPTZ, ADD COLUMN verified_by TEXT NOT NULL DEFAULT '';
-- engine-specific: Postgres makes random ids and tokens with gen_random_uuid().
UPDATE sso_domains d SET id = 'dom_' || replace(gen_random_uuid()::text, '-', ''), token = replace(gen_random_uuid()::text, '-', ''),
    added_by = p.updated_by, added_at = p.updated_at
    FROM sso_providers p WHERE p.org_id = d.org_id;
-- engine-specific: Postgres forgets a domain without its org's provider (SQLite's copy joins them).
DELETE FROM sso_domains WHERE id IS NULL;
-- engine-specific: Postgres changes sso_domains in place.
ALTER TABLE sso_domains ALTER COLUMN id SET NOT NULL, ALTER COLUMN token SET NOT NULL, ALTER COLUMN added_by SET NOT NULL,
    ALTER COLUMN added_at SET NOT NULL, DROP COLUMN provider_id, ADD PRIMARY KEY (org_id, id);
-- engine-specific: Postgres drops the old index (SQLite's goes with the old table).
DROP INDEX sso_domains_org;
CREATE UNIQUE INDEX sso_domains_org_domain ON sso_domains (org_id, domain);
CREATE UNIQUE INDEX sso_domains_verified ON sso_domains (domain) WHERE verified_at IS NOT NULL;
