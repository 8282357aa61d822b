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
    answered_at TIMESTAMP NOT NULL,
    updated_at  TIMESTAMP NOT NULL,
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
    chosen_at   TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, question_id),
    FOREIGN KEY (org_id, question_id) REFERENCES questions (org_id, id) ON DELETE CASCADE
);

-- knowledge_sharing is the org's default for sharing answers: 'off' (no
-- answer is shared or shown), 'ask' (the person chooses, unshared unless they do) or
-- 'on' (shared unless the person says no). knowledge_stale_days marks shared
-- answers older than that many days as possibly stale; 0 never does.
ALTER TABLE orgs ADD COLUMN knowledge_sharing TEXT NOT NULL DEFAULT 'ask';
ALTER TABLE orgs ADD COLUMN knowledge_stale_days INTEGER NOT NULL DEFAULT 180;

-- engine-specific: SQLite searches shared answers through an FTS5 table
-- over their questions and answers, with the porter stemmer, where Postgres
-- keeps a tsvector.
CREATE VIRTUAL TABLE shared_answers_fts USING fts5(
    question, answer, content='shared_answers', content_rowid='rowid', tokenize='porter unicode61'
);

-- engine-specific: keeps the FTS5 table in step with new shared answers.
CREATE TRIGGER shared_answers_fts_insert AFTER INSERT ON shared_answers BEGIN
    INSERT INTO shared_answers_fts (rowid, question, answer) VALUES (new.rowid, new.question, new.answer);
-- engine-specific: the end of the SQLite trigger above.
END;

-- engine-specific: keeps the FTS5 table in step with edited shared answers.
CREATE TRIGGER shared_answers_fts_update AFTER UPDATE OF question, answer ON shared_answers BEGIN
    INSERT INTO shared_answers_fts (shared_answers_fts, rowid, question, answer) VALUES ('delete', old.rowid, old.question, old.answer);
    -- engine-specific: the second statement of the SQLite trigger above.
    INSERT INTO shared_answers_fts (rowid, question, answer) VALUES (new.rowid, new.question, new.answer);
-- engine-specific: the end of the SQLite trigger above.
END;

-- engine-specific: keeps the FTS5 table in step with unshared answers.
CREATE TRIGGER shared_answers_fts_delete AFTER DELETE ON shared_answers BEGIN
    INSERT INTO shared_answers_fts (shared_answers_fts, rowid, question, answer) VALUES ('delete', old.rowid, old.question, old.answer);
-- engine-specific: the end of the SQLite trigger above.
END;
