ALTER TABLE orgs DROP COLUMN settings_saved_at;
