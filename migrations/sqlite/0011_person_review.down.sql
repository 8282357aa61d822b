ALTER TABLE drafts ADD COLUMN approval_expires_at TIMESTAMP;
ALTER TABLE drafts DROP COLUMN by_person;
ALTER TABLE drafts DROP COLUMN rejection_note;
