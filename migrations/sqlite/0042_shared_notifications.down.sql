-- engine-specific: see the SQLite step.
DROP TABLE shared_notifications;
