-- engine-specific: Postgres carries notifications with LISTEN/NOTIFY.
-- Processes sharing one SQLite file (ctalk stdio --local) notify each other
-- through this table: Notify appends a row, and every process's listener
-- reads the rows after the last it saw once PRAGMA data_version says the
-- file changed. Rows older than a minute are deleted.
CREATE TABLE shared_notifications (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    channel TEXT NOT NULL,
    payload TEXT NOT NULL,
    at      TIMESTAMP NOT NULL
);
