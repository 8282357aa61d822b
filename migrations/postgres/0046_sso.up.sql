-- Single sign-on (package sso). An organization's identity provider: kind
-- names the protocol ('oidc' now; SAML would be another kind beside it,
-- sharing sso_identities). One provider per org. client_secret is kept
-- as it is, since ctalk must send it to the provider's token endpoint:
-- never shown again, logged or audited. tested_at is the last successful
-- test login since the settings that reach the provider last changed;
-- required (sso_required) may be set only while it is.
CREATE TABLE sso_providers (
    id            TEXT NOT NULL PRIMARY KEY,
    org_id        TEXT NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('oidc')),
    issuer        TEXT NOT NULL,
    client_id     TEXT NOT NULL,
    client_secret TEXT NOT NULL,
    jit           BOOLEAN NOT NULL DEFAULT FALSE,
    link_by_email BOOLEAN NOT NULL DEFAULT FALSE,
    required      BOOLEAN NOT NULL DEFAULT FALSE,
    tested_at     TIMESTAMPTZ,
    tested_by     TEXT NOT NULL DEFAULT '',
    updated_by    TEXT NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX sso_providers_org ON sso_providers (org_id);

-- The email domains whose people the sign-in page sends to an org's
-- provider: each domain to one org.
CREATE TABLE sso_domains (
    domain      TEXT NOT NULL PRIMARY KEY,
    org_id      TEXT NOT NULL,
    provider_id TEXT NOT NULL
);
CREATE INDEX sso_domains_org ON sso_domains (org_id);

-- The link of a person at the provider (its stable subject) to one ctalk
-- member; email is the address the provider last gave, for the admins.
CREATE TABLE sso_identities (
    org_id        TEXT NOT NULL,
    provider_id   TEXT NOT NULL,
    subject       TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    email         TEXT NOT NULL DEFAULT '',
    linked_how    TEXT NOT NULL,
    linked_at     TIMESTAMPTZ NOT NULL,
    last_login_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (org_id, provider_id, subject)
);
CREATE UNIQUE INDEX sso_identities_user ON sso_identities (org_id, provider_id, user_id);

-- A sign-in begun at the provider and not yet back: the hash of its state,
-- the nonce and PKCE verifier it was sent with, what it was for, and the
-- page to return to. Taken once by the callback; expired rows are pruned.
CREATE TABLE sso_states (
    state_hash  TEXT NOT NULL PRIMARY KEY,
    org_id      TEXT NOT NULL,
    provider_id TEXT NOT NULL,
    purpose     TEXT NOT NULL CHECK (purpose IN ('signin', 'test')),
    user_id     TEXT NOT NULL DEFAULT '',
    nonce       TEXT NOT NULL,
    verifier    TEXT NOT NULL,
    next        TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX sso_states_expires ON sso_states (expires_at);
