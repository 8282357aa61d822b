CREATE TABLE orgs (
    id                  TEXT PRIMARY KEY,
    name                TEXT NOT NULL,
    admin_password_hash TEXT NOT NULL,
    approval_mode       TEXT NOT NULL DEFAULT 'agent',
    created_at          TIMESTAMP NOT NULL
);

CREATE TABLE users (
    org_id        TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    id            TEXT NOT NULL,
    name          TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('member', 'admin')),
    ownership     TEXT NOT NULL DEFAULT '[]',
    notes         TEXT NOT NULL DEFAULT '',
    profile_notes TEXT NOT NULL DEFAULT '',
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, id)
);

CREATE TABLE tokens (
    hash         TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    kind         TEXT NOT NULL DEFAULT 'login',
    label        TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMP NOT NULL,
    last_used_at TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP NOT NULL,
    revoked_at   TIMESTAMP,
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);
CREATE INDEX tokens_user ON tokens (org_id, user_id);

-- Failed logins are counted per account name, existing or not, so that the
-- lockout holds across replicas and reveals nothing about which accounts exist.
CREATE TABLE login_failures (
    org_id    TEXT NOT NULL,
    user_id   TEXT NOT NULL,
    failed_at TIMESTAMP NOT NULL
);
CREATE INDEX login_failures_account ON login_failures (org_id, user_id, failed_at);

CREATE TABLE questions (
    org_id          TEXT NOT NULL,
    id              TEXT NOT NULL,
    asker_id        TEXT NOT NULL,
    recipient_id    TEXT NOT NULL,
    body            TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'answered', 'declined', 'withdrawn')),
    idempotency_key TEXT,
    created_at      TIMESTAMP NOT NULL,
    resolved_at     TIMESTAMP,
    resolution      TEXT,
    PRIMARY KEY (org_id, id),
    FOREIGN KEY (org_id, asker_id) REFERENCES users (org_id, id) ON DELETE CASCADE,
    FOREIGN KEY (org_id, recipient_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX questions_idempotency ON questions (org_id, asker_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX questions_recipient ON questions (org_id, recipient_id, status, created_at);
CREATE INDEX questions_asker ON questions (org_id, asker_id, status, resolved_at);
