-- A person reviews their agent's drafts in the web app, signed in: approval
-- needs their session, so drafts no longer carry a link's expiry (old links
-- keep their token hash only to lead to the question). A rejection carries
-- the person's note to their agent; by_person marks a version the person
-- wrote themselves (an edit, or their own answer).
ALTER TABLE drafts ADD COLUMN rejection_note TEXT;
ALTER TABLE drafts ADD COLUMN by_person BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE drafts DROP COLUMN approval_expires_at;
