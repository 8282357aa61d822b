DROP TABLE sso_states;
DROP TABLE sso_identities;
DROP TABLE sso_domains;
DROP TABLE sso_providers;
