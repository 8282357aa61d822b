-- engine-specific: the defaults of the up step, which SQLite keeps, since
-- it cannot add a NOT NULL column without one.
ALTER TABLE users ALTER COLUMN password_hash DROP DEFAULT;
-- engine-specific: as above.
ALTER TABLE orgs ALTER COLUMN admin_password_hash DROP DEFAULT;
