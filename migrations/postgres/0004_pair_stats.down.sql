CREATE INDEX questions_recipient ON questions (org_id, recipient_id, status, created_at);
CREATE INDEX questions_asker ON questions (org_id, asker_id, status, resolved_at);
DROP INDEX IF EXISTS questions_withdrawal_unhanded;
DROP INDEX IF EXISTS questions_reply_unhanded;
DROP INDEX IF EXISTS questions_answered_pair;
DROP INDEX IF EXISTS questions_resolved;
DROP INDEX IF EXISTS questions_pending;
DROP TABLE IF EXISTS interactions;
