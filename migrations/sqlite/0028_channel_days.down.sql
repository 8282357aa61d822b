DROP TABLE IF EXISTS channel_days;
