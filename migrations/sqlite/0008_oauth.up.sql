-- OAuth 2.1 for MCP clients, and the browser sessions of the sign-in page.
-- Every secret (code, access token, refresh token, session) is stored as its
-- SHA-256 only.

-- Clients: registered dynamically (RFC 7591; kind 'dynamic', a random id) or
-- described by a Client ID Metadata Document (kind 'metadata', the id is the
-- document's URL; the row caches the document until expires_at). A dynamic
-- registration never used expires at expires_at.
CREATE TABLE oauth_clients (
    id            TEXT PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('dynamic', 'metadata')),
    name          TEXT NOT NULL,
    redirect_uris TEXT NOT NULL,
    metadata      TEXT NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    used_at       TIMESTAMP,
    expires_at    TIMESTAMP
);
CREATE INDEX oauth_clients_expiry ON oauth_clients (expires_at) WHERE used_at IS NULL;

-- Authorization codes: single use (used_at), short-lived.
CREATE TABLE oauth_codes (
    hash           TEXT PRIMARY KEY,
    client_id      TEXT NOT NULL,
    org_id         TEXT NOT NULL,
    user_id        TEXT NOT NULL,
    redirect_uri   TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    scope          TEXT NOT NULL,
    resource       TEXT NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    expires_at     TIMESTAMP NOT NULL,
    used_at        TIMESTAMP,
    -- grant_id is the grant the code was exchanged for, revoked if the code
    -- is presented again.
    grant_id       TEXT,
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);

-- A grant is one client connected as one person: what logout and the web
-- app's "connected clients" revoke. Its tokens die with it.
CREATE TABLE oauth_grants (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    client_id    TEXT NOT NULL,
    client_name  TEXT NOT NULL,
    scope        TEXT NOT NULL,
    resource     TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    last_used_at TIMESTAMP NOT NULL,
    revoked_at   TIMESTAMP,
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);
CREATE INDEX oauth_grants_user ON oauth_grants (org_id, user_id);

-- Access and refresh tokens of a grant. A refresh token that was rotated
-- records its successor (replaced_by) and when (rotated_at).
CREATE TABLE oauth_tokens (
    hash        TEXT PRIMARY KEY,
    grant_id    TEXT NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    created_at  TIMESTAMP NOT NULL,
    expires_at  TIMESTAMP NOT NULL,
    rotated_at  TIMESTAMP,
    replaced_by TEXT
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);

-- Consent a person gave a client, remembered so that the next sign-in of the
-- same client asks only for the password.
CREATE TABLE oauth_consents (
    org_id     TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    client_id  TEXT NOT NULL,
    scope      TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, user_id, client_id),
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);

-- Browser sessions of the sign-in page and the web app.
CREATE TABLE web_sessions (
    hash         TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    last_used_at TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP NOT NULL,
    revoked_at   TIMESTAMP,
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);
CREATE INDEX web_sessions_user ON web_sessions (org_id, user_id);
