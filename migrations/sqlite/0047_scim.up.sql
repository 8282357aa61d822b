-- SCIM provisioning (package scim). An org's identity provider calls
-- /scim/v2 with a bearer token an admin made in the web app: stored only
-- as its SHA-256 (hash), as every ctalk token is, with an expiry, and
-- revocable. id is the first characters of the hash, which the admin page
-- names it by.
CREATE TABLE scim_tokens (
    hash         TEXT NOT NULL PRIMARY KEY,
    id           TEXT NOT NULL,
    org_id       TEXT NOT NULL,
    label        TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP NOT NULL,
    last_used_at TIMESTAMP,
    revoked_at   TIMESTAMP
);
CREATE INDEX scim_tokens_org ON scim_tokens (org_id, created_at);

-- The members the identity provider manages: its userName (user_name as
-- sent; user_name_key lower-cased, unique per org, so that two creates of
-- one person racing each other make one member), its externalId, the
-- parts of the name it sent. Whether they are active is whether the member
-- is current (users.removed_at), whoever removed them. A member
-- it deletes loses this row; the member stays removed.
CREATE TABLE scim_users (
    org_id        TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    user_name     TEXT NOT NULL,
    user_name_key TEXT NOT NULL,
    external_id   TEXT NOT NULL DEFAULT '',
    given_name    TEXT NOT NULL DEFAULT '',
    family_name   TEXT NOT NULL DEFAULT '',
    version       INTEGER NOT NULL DEFAULT 1,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, user_id)
);
CREATE UNIQUE INDEX scim_users_user_name ON scim_users (org_id, user_name_key);
CREATE INDEX scim_users_external_id ON scim_users (org_id, external_id);
