-- A question's reminder is kept on its event, as remind_at, from the
-- event's expansion until it is due, rather than queued then as an event of
-- its own: the expansion of a question writes no row for it, and the worker
-- queues the reminder's event only once remind_at has come (and clears it).
-- A subject with an event not yet expanded, or whose reminder is still
-- ahead, has a pending reminder that its closing event must end.
ALTER TABLE notify_events ADD COLUMN remind_at TIMESTAMPTZ;
CREATE INDEX notify_events_remind ON notify_events (remind_at) WHERE remind_at IS NOT NULL;
DROP INDEX notify_events_subject;
CREATE INDEX notify_events_subject ON notify_events (org_id, subject) WHERE expanded_at IS NULL OR remind_at IS NOT NULL;
