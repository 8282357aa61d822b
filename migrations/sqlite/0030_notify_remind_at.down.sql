-- The reminders still kept on their events become events of their own, due
-- when they were, as before this migration.
INSERT INTO notify_events (id, org_id, user_id, kind, subject, actor_id, body, link, urgent, created_at, due_at)
SELECT id || '.r', org_id, user_id, 'reminder', subject, actor_id, body, link, urgent, created_at, remind_at
FROM notify_events WHERE remind_at IS NOT NULL;
DROP INDEX notify_events_subject;
CREATE INDEX notify_events_subject ON notify_events (org_id, subject) WHERE expanded_at IS NULL;
DROP INDEX notify_events_remind;
ALTER TABLE notify_events DROP COLUMN remind_at;
