ALTER TABLE orgs DROP COLUMN knowledge_stale_days;
ALTER TABLE orgs DROP COLUMN knowledge_sharing;
-- engine-specific: the FTS5 table and its triggers are SQLite's alone.
DROP TRIGGER shared_answers_fts_delete;
-- engine-specific: the FTS5 table and its triggers are SQLite's alone.
DROP TRIGGER shared_answers_fts_update;
-- engine-specific: the FTS5 table and its triggers are SQLite's alone.
DROP TRIGGER shared_answers_fts_insert;
-- engine-specific: the FTS5 table and its triggers are SQLite's alone.
DROP TABLE shared_answers_fts;
DROP TABLE answer_share_choices;
DROP TABLE shared_answers;
