-- Reverts 0054: the tables' owner goes around row-level security again.
-- engine-specific: row-level security is Postgres's.
ALTER TABLE answer_share_choices NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE audit_daily NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE audit_events NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE audit_orgs NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE channel_alerts NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE channel_days NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE channel_members NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE channel_messages NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE channel_posts NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE channel_subscriptions NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE channels NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE device_cookies NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE drafts NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE interactions NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE invite_sends NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE invites NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE knowledge_glossary NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE login_failures NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE notify_audit_streams NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE notify_deliveries NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE notify_events NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE notify_org_settings NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE notify_push_subscriptions NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE notify_settings NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE notify_webhooks NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE oauth_codes NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE oauth_consents NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE oauth_grants NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE passkey_ceremonies NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE passkeys NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE password_resets NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE presence_waits NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE question_days NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE question_events NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE questions NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE scim_groups NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE scim_tokens NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE scim_users NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE shared_answer_counts NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE shared_answers NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE slack_apps NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE slack_link_confirmations NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE slack_links NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE slack_messages NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE sso_assertions NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE sso_domains NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE sso_identities NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE sso_providers NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE sso_states NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE tokens NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE users NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE web_sessions NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE orgs NO FORCE ROW LEVEL SECURITY;
-- engine-specific: row-level security is Postgres's.
ALTER TABLE oauth_tokens NO FORCE ROW LEVEL SECURITY;
