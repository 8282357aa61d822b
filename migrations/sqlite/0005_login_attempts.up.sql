-- Attempts are counted per account and client address before the password
-- is checked: an address that fails too often is held back on that account
-- alone, and only a much higher count across all addresses holds the account.
ALTER TABLE login_failures ADD COLUMN client_addr TEXT NOT NULL DEFAULT '';
-- Pruning old attempts of every account, not only of the one being tried.
CREATE INDEX login_failures_at ON login_failures (failed_at);
