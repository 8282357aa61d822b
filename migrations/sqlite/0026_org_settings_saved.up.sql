-- When an admin last saved the organization's settings (how answers are
-- approved among them); NULL until the first time. The first-hour steps of
-- the web app read it: the step "choose how answers are approved" is done
-- once it is set.
ALTER TABLE orgs ADD COLUMN settings_saved_at TIMESTAMP;
