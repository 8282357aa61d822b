-- The Knowledge page lists an organization's most recently shared or
-- edited answers before anyone searches: read in this order, newest first.
CREATE INDEX shared_answers_recent ON shared_answers (org_id, updated_at DESC);
