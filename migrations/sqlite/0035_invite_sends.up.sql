-- Every invite mail sent (an invite or a resend), by org and by the
-- admin who sent it (empty for the org's admin password): the limits of
-- invites count them, and rows older than the window are deleted as new
-- ones come. A revoked or accepted invite still counts.
CREATE TABLE invite_sends (
    org_id  TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    sent_by TEXT NOT NULL,
    sent_at TIMESTAMP NOT NULL
);
CREATE INDEX invite_sends_org ON invite_sends (org_id, sent_at);
