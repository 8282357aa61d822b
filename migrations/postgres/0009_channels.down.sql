DROP TABLE IF EXISTS channel_messages;
DROP TABLE IF EXISTS channel_members;
DROP TABLE IF EXISTS channels;
