-- A shared answer: an answered question that its answerer (or their agent,
-- where the org lets the agent decide) shared with the organization, a copy
-- of the question and of the answer as sent, which the answerer and the
-- org's admins may edit or unshare later. Only these rows are ever shown to
-- anyone but the question's two people. knowledge owns it.
CREATE TABLE shared_answers (
    org_id      TEXT NOT NULL,
    question_id TEXT NOT NULL,
    asker_id    TEXT NOT NULL,
    answerer_id TEXT NOT NULL,
    question    TEXT NOT NULL,
    answer      TEXT NOT NULL,
    answered_at TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    edited_by   TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (org_id, question_id),
    FOREIGN KEY (org_id, question_id) REFERENCES questions (org_id, id) ON DELETE CASCADE,
    FOREIGN KEY (org_id, answerer_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);
CREATE INDEX shared_answers_answerer ON shared_answers (org_id, answerer_id);

-- A person's choice, made in the web app when they approve, edit or write
-- an answer, of whether it is shared once it is sent: it outranks what
-- their agent proposes with send_response.
CREATE TABLE answer_share_choices (
    org_id      TEXT NOT NULL,
    question_id TEXT NOT NULL,
    share       BOOLEAN NOT NULL,
    chosen_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (org_id, question_id),
    FOREIGN KEY (org_id, question_id) REFERENCES questions (org_id, id) ON DELETE CASCADE
);

-- knowledge_sharing is the org's default for sharing answers: 'off' (no
-- answer is shared or shown), 'ask' (the person chooses, unshared unless they do) or
-- 'on' (shared unless the person says no). knowledge_stale_days marks shared
-- answers older than that many days as possibly stale; 0 never does.
ALTER TABLE orgs ADD COLUMN knowledge_sharing TEXT NOT NULL DEFAULT 'ask';
ALTER TABLE orgs ADD COLUMN knowledge_stale_days INTEGER NOT NULL DEFAULT 180;

-- engine-specific: Postgres searches shared answers through a stored,
-- weighted tsvector (the question weighs A, the answer B), where SQLite
-- keeps an FTS5 table.
ALTER TABLE shared_answers ADD COLUMN search tsvector
    GENERATED ALWAYS AS (setweight(to_tsvector('english', question), 'A') || setweight(to_tsvector('english', answer), 'B')) STORED;

-- engine-specific: a GIN index over the tsvector, which SQLite does not have.
-- Without fastupdate, every search reads the index alone: a pending list
-- of recent entries (up to 4 MB, until a vacuum) is otherwise scanned
-- entry by entry on every query, which made a search at 100,000 answers
-- several times slower than at 1,000.
CREATE INDEX shared_answers_search ON shared_answers USING GIN (search) WITH (fastupdate = off);
