-- On Postgres, as on SQLite since step 31, a question's own row is its
-- notification's outbox: an ask made with notifications on stores its
-- question with notify set and with the id of its transaction (notify_xid),
-- and writes nothing else for it. The event's row in the ask's transaction
-- was most of what notifications cost an ask here, because an ask holds its
-- asker's advisory lock until it commits (BENCHMARKS.md, "Notifications").
-- Postgres has no commit order to read, so the worker reads by snapshots,
-- as queue readers of Postgres long have: it keeps the snapshot it read up
-- to (snap), and takes the questions whose transactions that snapshot saw
-- in progress or not yet begun and a newer one (upto) sees ended. A long
-- transaction delays nothing but its own questions. While it takes a window
-- in several batches, upto is fixed and after_xid, after_id say where the
-- last batch ended. pos counts the cursor's moves: a move is made only from
-- the position read, so two replicas never take one window twice. since,
-- set when the database's transaction ids start again below the cursor's
-- (a dump restored into another cluster), leaves out the questions asked
-- before the cursor last moved in the old cluster.

-- engine-specific: the transaction of a question notified from its row.
ALTER TABLE questions ADD COLUMN notify_xid xid8;

-- engine-specific: the outbox in the order the worker reads it.
CREATE INDEX questions_notify_xid ON questions (notify_xid, id) WHERE notify_xid IS NOT NULL;

-- engine-specific: the outbox's cursor, made of snapshots on Postgres.
CREATE TABLE notify_cursors (
    name      TEXT NOT NULL PRIMARY KEY,
    pos       BIGINT NOT NULL,
    snap      pg_snapshot NOT NULL,
    upto      pg_snapshot,
    after_xid xid8,
    after_id  TEXT,
    moved_at  TIMESTAMPTZ NOT NULL,
    since     TIMESTAMPTZ
);

-- engine-specific: the questions stored before this step are not notified.
INSERT INTO notify_cursors (name, pos, snap, moved_at) VALUES ('questions', 0, pg_current_snapshot(), now());
