-- When a verified email domain's TXT record was last found again (package
-- sso): each is looked up again a day after, and goes back to pending when
-- its record is gone. NULL: not looked up since it was verified.
ALTER TABLE sso_domains ADD COLUMN checked_at TIMESTAMP;
