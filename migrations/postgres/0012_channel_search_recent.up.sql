-- Search ranks the newest matches of a query rather than all of them: a
-- common word matches most of the history, and ranking every match was the
-- whole cost of a search. SQLite walks its FTS5 table from the newest row.

-- engine-specific: an index on the messages' times, to read the newest matches first.
CREATE INDEX channel_messages_recent ON channel_messages (org_id, created_at);
