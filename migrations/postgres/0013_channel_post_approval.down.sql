DROP TABLE channel_posts;
ALTER TABLE channel_messages DROP COLUMN approved_at;
ALTER TABLE orgs DROP COLUMN channel_post_mode;
