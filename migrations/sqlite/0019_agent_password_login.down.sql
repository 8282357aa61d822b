ALTER TABLE orgs DROP COLUMN agent_password_login;
