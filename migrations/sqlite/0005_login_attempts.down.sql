DROP INDEX IF EXISTS login_failures_at;
ALTER TABLE login_failures DROP COLUMN client_addr;
