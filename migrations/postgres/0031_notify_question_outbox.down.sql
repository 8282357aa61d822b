ALTER TABLE questions DROP COLUMN notify;
