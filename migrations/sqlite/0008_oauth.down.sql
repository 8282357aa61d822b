DROP TABLE IF EXISTS web_sessions;
DROP TABLE IF EXISTS oauth_consents;
DROP TABLE IF EXISTS oauth_tokens;
DROP TABLE IF EXISTS oauth_grants;
DROP TABLE IF EXISTS oauth_codes;
DROP TABLE IF EXISTS oauth_clients;
