-- A member's and an org's password hashes are written by auth alone: orgs
-- creates the row, and auth sets its hash in the same transaction, so the
-- columns need a default for the moment between the two.
-- engine-specific: Postgres changes a default in place.
ALTER TABLE users ALTER COLUMN password_hash SET DEFAULT '';
-- engine-specific: Postgres changes a default in place.
ALTER TABLE orgs ALTER COLUMN admin_password_hash SET DEFAULT '';
