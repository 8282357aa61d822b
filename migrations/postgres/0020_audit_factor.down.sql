ALTER TABLE audit_events DROP COLUMN factor;
