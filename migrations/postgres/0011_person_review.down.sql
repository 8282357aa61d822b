ALTER TABLE drafts ADD COLUMN approval_expires_at TIMESTAMPTZ;
ALTER TABLE drafts DROP COLUMN by_person;
ALTER TABLE drafts DROP COLUMN rejection_note;
