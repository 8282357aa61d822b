-- An organization's deletion: an admin schedules it (deletion_due_at, by
-- deletion_requested_by), sign-ins and tokens stop at once, and when it is
-- due every row of the org is deleted. retired_orgs is the operator's
-- record of each deleted org, kept outside it: its id, so that the id is
-- never given again, and when and how much was deleted; no content.
ALTER TABLE orgs ADD COLUMN deletion_due_at TIMESTAMP;
ALTER TABLE orgs ADD COLUMN deletion_requested_at TIMESTAMP;
ALTER TABLE orgs ADD COLUMN deletion_requested_by TEXT NOT NULL DEFAULT '';
CREATE INDEX orgs_deletion_due ON orgs (deletion_due_at) WHERE deletion_due_at IS NOT NULL;
CREATE TABLE retired_orgs (
    id           TEXT NOT NULL PRIMARY KEY,
    requested_at TIMESTAMP NOT NULL,
    deleted_at   TIMESTAMP NOT NULL,
    row_count    BIGINT NOT NULL
);
