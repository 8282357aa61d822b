DROP INDEX audit_events_seq;
ALTER TABLE audit_events DROP COLUMN hash;
ALTER TABLE audit_events DROP COLUMN seq;
DROP TABLE audit_keys;
DROP TABLE audit_orgs;
