-- factor names how the caller of an audited action proved who they were:
-- a person in the web app ('password_session', 'passkey_session' or 'passkey') or an agent's
-- credential ('login_token', 'personal_token', 'oauth_token',
-- 'admin_password'); '' where nobody was identified. Never a secret.
ALTER TABLE audit_events ADD COLUMN factor TEXT NOT NULL DEFAULT '';
