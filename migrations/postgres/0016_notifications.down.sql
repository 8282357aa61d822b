DROP TABLE notify_keys;
DROP TABLE notify_org_settings;
DROP TABLE notify_settings;
DROP TABLE notify_webhooks;
DROP TABLE notify_deliveries;
DROP TABLE notify_events;
