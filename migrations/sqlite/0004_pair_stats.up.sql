-- Questions asked from one user to another, and when the pair last
-- interacted: the sender context of every inbox item, read in constant time
-- however long the org's history grows.
CREATE TABLE interactions (
    org_id       TEXT NOT NULL,
    asker_id     TEXT NOT NULL,
    recipient_id TEXT NOT NULL,
    asked        INTEGER NOT NULL,
    last_at      TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, asker_id, recipient_id)
);
INSERT INTO interactions (org_id, asker_id, recipient_id, asked, last_at)
    SELECT org_id, asker_id, recipient_id, COUNT(*), MAX(COALESCE(resolved_at, created_at))
    FROM questions GROUP BY org_id, asker_id, recipient_id;

-- Partial indexes that keep every hot query a short range scan, whatever the
-- size of the history: pending questions, undelivered events, recent answers.
CREATE INDEX questions_pending ON questions (org_id, recipient_id, created_at, id) WHERE status = 'pending';
CREATE INDEX questions_resolved ON questions (org_id, asker_id, resolved_at, id) WHERE status <> 'pending';
CREATE INDEX questions_answered_pair ON questions (org_id, asker_id, recipient_id, resolved_at) WHERE status = 'answered';
CREATE INDEX questions_reply_unhanded ON questions (org_id, asker_id) WHERE status <> 'pending' AND asker_handed_at IS NULL;
CREATE INDEX questions_withdrawal_unhanded ON questions (org_id, recipient_id) WHERE status = 'withdrawn' AND withdrawal_handed_at IS NULL;
DROP INDEX questions_recipient;
DROP INDEX questions_asker;
