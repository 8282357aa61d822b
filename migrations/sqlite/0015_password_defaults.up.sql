-- A member's and an org's password hashes are written by auth alone: orgs
-- creates the row, and auth sets its hash in the same transaction, so the
-- columns need a default for the moment between the two.
-- engine-specific: SQLite cannot change a default, so each column is copied
-- into a new one that has it.
ALTER TABLE users ADD COLUMN password_hash_new TEXT NOT NULL DEFAULT '';
-- engine-specific: the copy.
UPDATE users SET password_hash_new = password_hash;
-- engine-specific: the copy.
ALTER TABLE users DROP COLUMN password_hash;
-- engine-specific: the copy.
ALTER TABLE users RENAME COLUMN password_hash_new TO password_hash;
-- engine-specific: the copy.
ALTER TABLE orgs ADD COLUMN admin_password_hash_new TEXT NOT NULL DEFAULT '';
-- engine-specific: the copy.
UPDATE orgs SET admin_password_hash_new = admin_password_hash;
-- engine-specific: the copy.
ALTER TABLE orgs DROP COLUMN admin_password_hash;
-- engine-specific: the copy.
ALTER TABLE orgs RENAME COLUMN admin_password_hash_new TO admin_password_hash;
