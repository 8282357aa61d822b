DROP TABLE retired_orgs;
DROP INDEX orgs_deletion_due;
ALTER TABLE orgs DROP COLUMN deletion_requested_by;
ALTER TABLE orgs DROP COLUMN deletion_requested_at;
ALTER TABLE orgs DROP COLUMN deletion_due_at;
