-- A passkey added by someone who had none, in an org whose approval_factor
-- is passkey, waits for a factor a password does not give: the link mailed
-- to the person (confirm_hash is the hash of its token, valid until
-- confirm_expires_at) or an admin's approval with their passkey. Until
-- then it neither signs in nor verifies; confirm_hash is NULL once it may.
ALTER TABLE passkeys ADD COLUMN confirm_hash TEXT;
ALTER TABLE passkeys ADD COLUMN confirm_expires_at TIMESTAMPTZ;
CREATE UNIQUE INDEX passkeys_confirm ON passkeys (confirm_hash) WHERE confirm_hash IS NOT NULL;
