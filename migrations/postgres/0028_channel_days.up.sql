-- The overview's channel messages of a day that has ended, kept once
-- counted, as they no longer change: per org, UTC day (YYYY-MM-DD) and
-- channel, the messages and those an agent posted. A row with the empty
-- channel name marks the day counted, empty days too.
CREATE TABLE channel_days (
    org_id   TEXT NOT NULL,
    day      TEXT NOT NULL,
    channel  TEXT NOT NULL,
    messages BIGINT NOT NULL,
    by_agent BIGINT NOT NULL,
    PRIMARY KEY (org_id, day, channel)
);
