-- An organization's glossary: the synonyms and abbreviations its people
-- use (SSO, single sign-on; invoice, bill), which its admins edit. A term
-- means the same as what it stands for, both ways, in find_answers and in
-- ask_person's look-up. Each change moves the org's shared_answer_counts
-- version on, in its transaction, so that every replica reads the glossary
-- again with the answers. knowledge owns it.
CREATE TABLE knowledge_glossary (
    org_id     TEXT NOT NULL,
    term       TEXT NOT NULL,
    means      TEXT NOT NULL,
    updated_by TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (org_id, term),
    FOREIGN KEY (org_id) REFERENCES orgs (id) ON DELETE CASCADE
);
