ALTER TABLE users DROP COLUMN removed_at;
