-- Whether an agent may log in over MCP with its person's password
-- ('allowed', the default) or not ('disabled': login answers how to connect
-- by browser sign-in or a personal token, so no password passes through an
-- agent). Agents may only disable it; allowing it again is the web app's.
ALTER TABLE orgs ADD COLUMN agent_password_login TEXT NOT NULL DEFAULT 'allowed';
