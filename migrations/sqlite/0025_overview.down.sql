DROP INDEX IF EXISTS notify_deliveries_created;
DROP INDEX IF EXISTS drafts_approved;
DROP INDEX IF EXISTS questions_answered_at;
DROP INDEX IF EXISTS questions_created;
DROP TABLE IF EXISTS question_days;
DROP TABLE IF EXISTS audit_daily;
