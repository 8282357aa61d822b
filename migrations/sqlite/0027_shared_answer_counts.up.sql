-- How many answers each organization shares, and a version that every
-- share, edit and unshare moves on, in the same transaction. ask_person's
-- look-up reads this one row first: an organization sharing nothing is not
-- searched, and a replica keeps the words of the organization's shared
-- answers for as long as the version stands, to skip the search when the
-- question's words cannot reach the coverage an offer needs. knowledge
-- owns it.
CREATE TABLE shared_answer_counts (
    org_id  TEXT PRIMARY KEY,
    answers INTEGER NOT NULL,
    version BIGINT NOT NULL
);
INSERT INTO shared_answer_counts (org_id, answers, version)
    SELECT org_id, COUNT(*), 1 FROM shared_answers GROUP BY org_id;
