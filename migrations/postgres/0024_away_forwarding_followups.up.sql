-- Away: a member sets themselves away until a time, with a delegate (another
-- member) and a note; asks to them say so, and their notifications stop.
ALTER TABLE users ADD COLUMN away_until TIMESTAMPTZ;
ALTER TABLE users ADD COLUMN away_delegate TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN away_note TEXT NOT NULL DEFAULT '';

-- Follow-ups: a question asked after an answer, on the same thread, whose id
-- is the first question's. A question waits for information while
-- info_requested_at is set (status stays 'pending'). events counts its rows
-- in question_events; asker_news_at is when something (a forward, a request
-- for information) happened that the asker's agent is handed through
-- asker_handed_at, as it is handed an answer.
ALTER TABLE questions ADD COLUMN thread_id TEXT;
ALTER TABLE questions ADD COLUMN follow_up_of TEXT;
ALTER TABLE questions ADD COLUMN info_requested_at TIMESTAMPTZ;
ALTER TABLE questions ADD COLUMN events INTEGER NOT NULL DEFAULT 0;
ALTER TABLE questions ADD COLUMN asker_news_at TIMESTAMPTZ;
CREATE INDEX questions_thread ON questions (org_id, thread_id) WHERE thread_id IS NOT NULL;

-- What happened to a question on its way: forwards (actor to target, with a
-- note) and the exchange of a request for information and its reply.
CREATE TABLE question_events (
    org_id      TEXT NOT NULL,
    question_id TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('forwarded', 'info_requested', 'info_provided')),
    actor_id    TEXT NOT NULL,
    target_id   TEXT NOT NULL DEFAULT '',
    body        TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (org_id, question_id, seq),
    FOREIGN KEY (org_id, question_id) REFERENCES questions (org_id, id) ON DELETE CASCADE
);
