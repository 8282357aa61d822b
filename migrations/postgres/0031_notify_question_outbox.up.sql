-- On SQLite step 31 makes the row of a question the outbox of its
-- notification, marked by notify. On Postgres an ask stores its event with
-- the question in one round trip: the column is kept, always false, so
-- that both engines store a question with one statement.
ALTER TABLE questions ADD COLUMN notify BOOLEAN NOT NULL DEFAULT FALSE;
