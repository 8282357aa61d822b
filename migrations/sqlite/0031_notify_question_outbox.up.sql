-- On SQLite a question's notification is not a row of notify_events written
-- in the ask's transaction: the question's own row is the outbox. An ask
-- made with notifications on stores its question with notify set, the
-- worker reads the questions stored after its cursor, in rowid order (on
-- SQLite, whose one writer gives each new row the next rowid, the order of
-- their commits), and stores each one's event, already expanded, with its
-- deliveries and the cursor's advance, in one transaction: a question is
-- notified once, and never one that rolled back. The event row and its
-- index entries were a sixth of an ask's time in the writer (BENCHMARKS.md,
-- "Notifications"). Postgres, where an ask is one round trip with its event,
-- keeps writing the event with the question.

-- The mark of a question notified from its row (on Postgres always false).
ALTER TABLE questions ADD COLUMN notify BOOLEAN NOT NULL DEFAULT FALSE;

-- engine-specific: where the worker has read the outbox up to.
CREATE TABLE notify_cursors (
    name TEXT NOT NULL PRIMARY KEY,
    pos  INTEGER NOT NULL
);

-- engine-specific: the questions stored before this step are not notified.
INSERT INTO notify_cursors (name, pos) SELECT 'questions', COALESCE(MAX(rowid), 0) FROM questions;

-- engine-specific: SQLite gives a new row one more than the largest rowid
-- left, so that once the newest questions are deleted (a member removed, an
-- org deleted) a new one may take a rowid the cursor has passed: the cursor
-- steps back to the largest left, which it had read.
CREATE TRIGGER questions_notify_cursor AFTER DELETE ON questions
WHEN OLD.rowid > (SELECT COALESCE(MAX(rowid), 0) FROM questions)
BEGIN
    UPDATE notify_cursors SET pos = (SELECT COALESCE(MAX(rowid), 0) FROM questions)
    WHERE name = 'questions' AND pos > (SELECT COALESCE(MAX(rowid), 0) FROM questions);
-- engine-specific: the end of the SQLite trigger above.
END;
