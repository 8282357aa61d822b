DROP TABLE audit_keys;
DROP TABLE audit_orgs;
DROP INDEX audit_events_chain;
ALTER TABLE audit_events DROP COLUMN hash;
ALTER TABLE audit_events DROP COLUMN seq;
