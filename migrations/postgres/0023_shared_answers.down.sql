ALTER TABLE orgs DROP COLUMN knowledge_stale_days;
ALTER TABLE orgs DROP COLUMN knowledge_sharing;
DROP TABLE answer_share_choices;
DROP TABLE shared_answers;
