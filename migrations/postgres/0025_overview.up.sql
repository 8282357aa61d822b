-- The admins' overview reads a day's tool calls from one row per org, day
-- (UTC, YYYY-MM-DD), tool and outcome, written by the audit log in the same
-- transaction as the events, rather than counting up to millions of events
-- per page. The le_ columns count the calls that took at most that many
-- milliseconds and more than the previous column's (le_inf: over 30 s), so
-- that percentiles are estimated from the buckets as Prometheus does.
CREATE TABLE audit_daily (
    org_id      TEXT NOT NULL,
    day         TEXT NOT NULL,
    tool        TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    calls       BIGINT NOT NULL DEFAULT 0,
    duration_ms DOUBLE PRECISION NOT NULL DEFAULT 0,
    le_5        BIGINT NOT NULL DEFAULT 0,
    le_10       BIGINT NOT NULL DEFAULT 0,
    le_25       BIGINT NOT NULL DEFAULT 0,
    le_50       BIGINT NOT NULL DEFAULT 0,
    le_100      BIGINT NOT NULL DEFAULT 0,
    le_250      BIGINT NOT NULL DEFAULT 0,
    le_500      BIGINT NOT NULL DEFAULT 0,
    le_1000     BIGINT NOT NULL DEFAULT 0,
    le_2500     BIGINT NOT NULL DEFAULT 0,
    le_5000     BIGINT NOT NULL DEFAULT 0,
    le_10000    BIGINT NOT NULL DEFAULT 0,
    le_30000    BIGINT NOT NULL DEFAULT 0,
    le_inf      BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, day, tool, outcome)
);

-- engine-specific: the UTC day of a stored time.
INSERT INTO audit_daily (org_id, day, tool, outcome, calls, duration_ms, le_5, le_10, le_25, le_50, le_100, le_250, le_500, le_1000, le_2500, le_5000, le_10000, le_30000, le_inf)
SELECT org_id, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), tool, outcome, COUNT(*), SUM(duration_ms),
    SUM(CASE WHEN duration_ms <= 5 THEN 1 ELSE 0 END),
    SUM(CASE WHEN duration_ms > 5 AND duration_ms <= 10 THEN 1 ELSE 0 END),
    SUM(CASE WHEN duration_ms > 10 AND duration_ms <= 25 THEN 1 ELSE 0 END),
    SUM(CASE WHEN duration_ms > 25 AND duration_ms <= 50 THEN 1 ELSE 0 END),
    SUM(CASE WHEN duration_ms > 50 AND duration_ms <= 100 THEN 1 ELSE 0 END),
    SUM(CASE WHEN duration_ms > 100 AND duration_ms <= 250 THEN 1 ELSE 0 END),
    SUM(CASE WHEN duration_ms > 250 AND duration_ms <= 500 THEN 1 ELSE 0 END),
    SUM(CASE WHEN duration_ms > 500 AND duration_ms <= 1000 THEN 1 ELSE 0 END),
    SUM(CASE WHEN duration_ms > 1000 AND duration_ms <= 2500 THEN 1 ELSE 0 END),
    SUM(CASE WHEN duration_ms > 2500 AND duration_ms <= 5000 THEN 1 ELSE 0 END),
    SUM(CASE WHEN duration_ms > 5000 AND duration_ms <= 10000 THEN 1 ELSE 0 END),
    SUM(CASE WHEN duration_ms > 10000 AND duration_ms <= 30000 THEN 1 ELSE 0 END),
    SUM(CASE WHEN duration_ms > 30000 THEN 1 ELSE 0 END)
FROM audit_events GROUP BY org_id, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), tool, outcome;

-- The overview's questions of a day that has ended, kept once counted, as
-- they no longer change: kind 'asked' (bucket 0), 'answer' and 'approval'
-- (bucket: the index of the time to it in inbox.WaitBoundsSeconds), each
-- with its count n; kind 'done' marks the day counted, empty days too.
CREATE TABLE question_days (
    org_id TEXT NOT NULL,
    day    TEXT NOT NULL,
    kind   TEXT NOT NULL,
    bucket INTEGER NOT NULL,
    n      BIGINT NOT NULL,
    PRIMARY KEY (org_id, day, kind, bucket)
);

-- The overview's counts per day of questions asked, answered and approved,
-- and of notification deliveries, read a range of one org's rows.
CREATE INDEX questions_created ON questions (org_id, created_at);
CREATE INDEX questions_answered_at ON questions (org_id, resolved_at) WHERE status = 'answered';
CREATE INDEX drafts_approved ON drafts (org_id, approved_at) WHERE approved_at IS NOT NULL;
CREATE INDEX notify_deliveries_created ON notify_deliveries (org_id, created_at);
