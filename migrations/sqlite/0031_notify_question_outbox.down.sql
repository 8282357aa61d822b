-- engine-specific: the questions the worker has not read yet become events
-- not yet expanded, as an ask queued them before this step.
INSERT INTO notify_events (id, org_id, user_id, kind, subject, actor_id, body, link, urgent, created_at, due_at)
SELECT 'ev_' || q.id, q.org_id, q.recipient_id, 'question', q.id, q.asker_id, q.body, '/inbox/' || q.id, FALSE, q.created_at, q.created_at
FROM questions q WHERE q.notify AND q.rowid > (SELECT pos FROM notify_cursors WHERE name = 'questions');

-- engine-specific: the outbox's cursor and mark.
DROP TRIGGER questions_notify_cursor;
-- engine-specific: the outbox's cursor and mark.
DROP TABLE notify_cursors;
ALTER TABLE questions DROP COLUMN notify;
