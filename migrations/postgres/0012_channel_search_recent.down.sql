-- engine-specific: the index of the up step exists on Postgres only.
DROP INDEX IF EXISTS channel_messages_recent;
