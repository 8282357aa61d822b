DROP TABLE IF EXISTS drafts;
DROP INDEX IF EXISTS questions_pair_recently;
DROP INDEX IF EXISTS questions_asked_recently;
ALTER TABLE questions DROP COLUMN asker_handed_at;
ALTER TABLE questions DROP COLUMN withdrawal_handed_at;
ALTER TABLE questions DROP COLUMN recipient_handed_at;
