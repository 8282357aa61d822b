ALTER TABLE orgs DROP COLUMN require_passkey;
ALTER TABLE orgs DROP COLUMN approval_factor;
DROP TABLE device_cookies;
ALTER TABLE web_sessions DROP COLUMN signed_in_with;
ALTER TABLE web_sessions DROP COLUMN passkey_at;
DROP TABLE passkey_ceremonies;
DROP TABLE passkeys;
