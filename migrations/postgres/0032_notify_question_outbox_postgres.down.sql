-- engine-specific: the questions the worker has not read yet become events
-- not yet expanded, as an ask queued them before this step.
INSERT INTO notify_events (id, org_id, user_id, kind, subject, actor_id, body, link, urgent, created_at, due_at)
SELECT 'ev_' || q.id, q.org_id, q.recipient_id, 'question', q.id, q.asker_id, q.body, '/inbox/' || q.id, FALSE, q.created_at, q.created_at
FROM questions q, notify_cursors c
WHERE c.name = 'questions' AND q.notify AND q.notify_xid IS NOT NULL
  AND (c.since IS NULL OR q.created_at > c.since)
  AND NOT pg_visible_in_snapshot(q.notify_xid, c.snap)
  AND (c.upto IS NULL OR c.after_xid IS NULL OR NOT pg_visible_in_snapshot(q.notify_xid, c.upto)
       OR (q.notify_xid, q.id) > (c.after_xid, c.after_id));

-- engine-specific: the outbox's cursor.
DROP TABLE notify_cursors;
-- engine-specific: the outbox's index and mark.
DROP INDEX questions_notify_xid;
-- engine-specific: the outbox's mark.
ALTER TABLE questions DROP COLUMN notify_xid;
