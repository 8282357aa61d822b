ALTER TABLE sso_domains DROP COLUMN checked_at;
