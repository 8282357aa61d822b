-- Delivery bookkeeping: each event is handed to its reader once. A row-level
-- "handed" time, claimed with one UPDATE ... RETURNING, cannot skip an event
-- the way a sequence cursor can when transactions commit out of order.
ALTER TABLE questions ADD COLUMN recipient_handed_at TIMESTAMPTZ;
ALTER TABLE questions ADD COLUMN withdrawal_handed_at TIMESTAMPTZ;
ALTER TABLE questions ADD COLUMN asker_handed_at TIMESTAMPTZ;

CREATE INDEX questions_asked_recently ON questions (org_id, asker_id, created_at);
CREATE INDEX questions_pair_recently ON questions (org_id, recipient_id, asker_id, created_at);

CREATE TABLE drafts (
    org_id               TEXT NOT NULL,
    question_id          TEXT NOT NULL,
    version              INTEGER NOT NULL,
    body                 TEXT NOT NULL,
    created_at           TIMESTAMPTZ NOT NULL,
    approval_token_hash  TEXT UNIQUE,
    approval_expires_at  TIMESTAMPTZ,
    approved_at          TIMESTAMPTZ,
    rejected_at          TIMESTAMPTZ,
    PRIMARY KEY (org_id, question_id, version),
    FOREIGN KEY (org_id, question_id) REFERENCES questions (org_id, id) ON DELETE CASCADE
);
