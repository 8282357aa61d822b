-- engine-specific: the FTS5 table that SQLite's search reads (its triggers go with channel_messages).
DROP TABLE IF EXISTS channel_messages_fts;
DROP TABLE IF EXISTS channel_messages;
DROP TABLE IF EXISTS channel_members;
DROP TABLE IF EXISTS channels;
