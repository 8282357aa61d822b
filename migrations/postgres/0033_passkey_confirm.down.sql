DROP INDEX passkeys_confirm;
ALTER TABLE passkeys DROP COLUMN confirm_expires_at;
ALTER TABLE passkeys DROP COLUMN confirm_hash;
