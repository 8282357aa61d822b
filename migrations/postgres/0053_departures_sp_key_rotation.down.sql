ALTER TABLE orgs DROP COLUMN departure_questions;
ALTER TABLE sso_providers DROP COLUMN sp_prev_until;
ALTER TABLE sso_providers DROP COLUMN sp_prev_cert;
ALTER TABLE sso_providers DROP COLUMN sp_prev_key;
