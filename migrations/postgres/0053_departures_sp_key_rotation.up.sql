-- What becomes of the questions still waiting for a member who leaves
-- (package orgs holds the setting, usecase.Departures applies it):
-- 'decline' declines them to their askers; 'delegate' forwards each to the
-- member's away delegate while that delegate is still a member, and
-- declines the rest.
ALTER TABLE orgs ADD COLUMN departure_questions TEXT NOT NULL DEFAULT 'decline';

-- An org's SAML signing key rolled (package sso): the key pair it
-- replaced, still offered in the SP metadata as a signing certificate and
-- still decrypting assertions encrypted to it until sp_prev_until, so that
-- identity providers that read the metadata again meanwhile trust the new
-- key before the old one goes. Never shown, logged or audited.
ALTER TABLE sso_providers ADD COLUMN sp_prev_key TEXT NOT NULL DEFAULT '';
ALTER TABLE sso_providers ADD COLUMN sp_prev_cert TEXT NOT NULL DEFAULT '';
ALTER TABLE sso_providers ADD COLUMN sp_prev_until TIMESTAMPTZ;
