-- Row-level security (Postgres only): every table that holds an
-- organization's rows lets a statement see and write only the rows of the
-- organization its transaction is scoped to, whatever its own WHERE
-- clause says. ctalk sets the scope at the start of each transaction with
-- set_config(..., true) (ctalk.WithOrg, ctalk.AsOperator), so that it ends
-- with the transaction and holds through a pooler in transaction mode:
-- ctalk.org_id is the organization, ctalk.scope = 'operator' marks the
-- operator's work that crosses organizations (notifications, pruning, an
-- org's deletion). A transaction that set neither sees no row: unset, the
-- settings read as NULL or empty, which no org_id equals.
--
-- The policies bind roles that neither own the tables nor bypass
-- row-level security: the role of DATABASE_ROLE, or a login that owns
-- nothing. The owner, who runs these migrations, is not bound (no FORCE),
-- so that a server that connects as the owner keeps working as before:
-- ctalk says at start which of the two it runs as (db.DB.RLS).
--
-- The orgs table is keyed by id. oauth_tokens reaches its org through its
-- grant, whose own policy the subquery is subject to. The other tables
-- without org_id hold no organization's rows: keys, the notification
-- worker's cursor, OAuth clients (registered before any org is known), the
-- throttle of password resets, Slack's payload ids and the record of
-- deleted orgs.

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE answer_share_choices ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON answer_share_choices
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE audit_daily ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON audit_daily
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE audit_events ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON audit_events
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE audit_orgs ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON audit_orgs
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE channel_alerts ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON channel_alerts
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE channel_days ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON channel_days
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE channel_members ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON channel_members
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE channel_messages ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON channel_messages
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE channel_posts ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON channel_posts
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE channel_subscriptions ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON channel_subscriptions
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE channels ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON channels
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE device_cookies ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON device_cookies
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE drafts ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON drafts
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE interactions ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON interactions
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE invite_sends ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON invite_sends
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE invites ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON invites
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE knowledge_glossary ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON knowledge_glossary
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE login_failures ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON login_failures
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE notify_audit_streams ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON notify_audit_streams
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE notify_deliveries ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON notify_deliveries
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE notify_events ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON notify_events
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE notify_org_settings ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON notify_org_settings
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE notify_push_subscriptions ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON notify_push_subscriptions
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE notify_settings ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON notify_settings
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE notify_webhooks ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON notify_webhooks
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE oauth_codes ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON oauth_codes
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE oauth_consents ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON oauth_consents
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE oauth_grants ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON oauth_grants
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE passkey_ceremonies ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON passkey_ceremonies
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE passkeys ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON passkeys
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE password_resets ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON password_resets
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE presence_waits ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON presence_waits
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE question_days ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON question_days
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE question_events ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON question_events
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE questions ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON questions
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE scim_groups ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON scim_groups
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE scim_tokens ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON scim_tokens
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE scim_users ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON scim_users
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE shared_answer_counts ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON shared_answer_counts
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE shared_answers ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON shared_answers
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE slack_apps ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON slack_apps
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE slack_link_confirmations ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON slack_link_confirmations
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE slack_links ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON slack_links
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE slack_messages ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON slack_messages
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE sso_assertions ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON sso_assertions
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE sso_domains ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON sso_domains
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE sso_identities ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON sso_identities
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE sso_providers ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON sso_providers
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE sso_states ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON sso_states
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE tokens ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON tokens
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE users ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON users
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, SQLite keeps each statement's own org filter.
ALTER TABLE web_sessions ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON web_sessions
    USING (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (org_id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, an org's own row.
ALTER TABLE orgs ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above.
CREATE POLICY org_isolation ON orgs
    USING (id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator')
    WITH CHECK (id = current_setting('ctalk.org_id', true) OR current_setting('ctalk.scope', true) = 'operator');

-- engine-specific: row-level security is Postgres's, a token belongs to its grant's org.
ALTER TABLE oauth_tokens ENABLE ROW LEVEL SECURITY;
-- engine-specific: the policy of the statement above, which oauth_grants' own policy limits.
CREATE POLICY org_isolation ON oauth_tokens
    USING (EXISTS (SELECT 1 FROM oauth_grants g WHERE g.id = grant_id))
    WITH CHECK (EXISTS (SELECT 1 FROM oauth_grants g WHERE g.id = grant_id));
