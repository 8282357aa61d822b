-- What becomes of the questions still waiting for a member who leaves
-- (package orgs holds the setting, usecase.Departures applies it):
-- 'decline' declines them to their askers; 'delegate' forwards each to the
-- member's away delegate while that delegate is still a member, and
-- declines the rest.
ALTER TABLE orgs ADD COLUMN departure_questions TEXT NOT NULL DEFAULT 'decline';
