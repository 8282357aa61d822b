-- Row-level security binds the tables' owner too (FORCE), not only a role
-- that owns nothing (0051): a server that connects as the owner, as most
-- hosted databases hand one out, now sees and writes only the rows of the
-- organization each statement is scoped to, like one with DATABASE_ROLE.
-- Only a superuser or a role with BYPASSRLS goes around the policies;
-- ctalk says at start whether they are in force (db.DB.RLS).
--
-- Migrations run as the owner too: their connection sets ctalk.scope to
-- 'operator' for the whole session (db.DB.migrator), so that a migration
-- that reads or rewrites rows does so for every organization.

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE answer_share_choices FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE audit_daily FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE audit_events FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE audit_orgs FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE channel_alerts FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE channel_days FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE channel_members FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE channel_messages FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE channel_posts FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE channel_subscriptions FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE channels FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE device_cookies FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE drafts FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE interactions FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE invite_sends FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE invites FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE knowledge_glossary FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE login_failures FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE notify_audit_streams FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE notify_deliveries FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE notify_events FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE notify_org_settings FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE notify_push_subscriptions FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE notify_settings FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE notify_webhooks FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE oauth_codes FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE oauth_consents FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE oauth_grants FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE passkey_ceremonies FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE passkeys FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE password_resets FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE presence_waits FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE question_days FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE question_events FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE questions FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE scim_groups FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE scim_tokens FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE scim_users FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE shared_answer_counts FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE shared_answers FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE slack_apps FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE slack_link_confirmations FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE slack_links FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE slack_messages FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE sso_assertions FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE sso_domains FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE sso_identities FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE sso_providers FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE sso_states FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE tokens FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE users FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE web_sessions FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE orgs FORCE ROW LEVEL SECURITY;

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE oauth_tokens FORCE ROW LEVEL SECURITY;
