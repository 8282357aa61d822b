-- Reverts 0051: drops every policy and turns row-level security off.
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON answer_share_choices;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE answer_share_choices DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON audit_daily;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE audit_daily DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON audit_events;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE audit_events DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON audit_orgs;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE audit_orgs DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON channel_alerts;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE channel_alerts DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON channel_days;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE channel_days DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON channel_members;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE channel_members DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON channel_messages;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE channel_messages DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON channel_posts;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE channel_posts DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON channel_subscriptions;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE channel_subscriptions DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON channels;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE channels DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON device_cookies;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE device_cookies DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON drafts;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE drafts DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON interactions;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE interactions DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON invite_sends;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE invite_sends DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON invites;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE invites DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON knowledge_glossary;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE knowledge_glossary DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON login_failures;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE login_failures DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON notify_audit_streams;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE notify_audit_streams DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON notify_deliveries;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE notify_deliveries DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON notify_events;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE notify_events DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON notify_org_settings;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE notify_org_settings DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON notify_push_subscriptions;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE notify_push_subscriptions DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON notify_settings;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE notify_settings DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON notify_webhooks;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE notify_webhooks DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON oauth_codes;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE oauth_codes DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON oauth_consents;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE oauth_consents DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON oauth_grants;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE oauth_grants DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON passkey_ceremonies;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE passkey_ceremonies DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON passkeys;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE passkeys DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON password_resets;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE password_resets DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON presence_waits;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE presence_waits DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON question_days;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE question_days DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON question_events;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE question_events DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON questions;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE questions DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON scim_groups;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE scim_groups DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON scim_tokens;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE scim_tokens DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON scim_users;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE scim_users DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON shared_answer_counts;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE shared_answer_counts DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON shared_answers;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE shared_answers DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON slack_apps;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE slack_apps DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON slack_link_confirmations;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE slack_link_confirmations DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON slack_links;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE slack_links DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON slack_messages;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE slack_messages DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON sso_assertions;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE sso_assertions DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON sso_domains;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE sso_domains DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON sso_identities;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE sso_identities DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON sso_providers;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE sso_providers DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON sso_states;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE sso_states DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON tokens;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE tokens DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON users;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE users DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON web_sessions;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE web_sessions DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON orgs;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE orgs DISABLE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
DROP POLICY org_isolation ON oauth_tokens;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE oauth_tokens DISABLE ROW LEVEL SECURITY;
