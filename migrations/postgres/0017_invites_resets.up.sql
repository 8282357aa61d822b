-- A member's email address, for invites, password resets and
-- notifications: optional, stored in lower case, one per current member of
-- an org (a former member's address may be given to someone new).
ALTER TABLE users ADD COLUMN email TEXT;
CREATE UNIQUE INDEX users_email ON users (org_id, email) WHERE email IS NOT NULL AND removed_at IS NULL;

-- An invite by email to join an org under user_id: the person opens the
-- mailed link, whose token is stored only as its hash, and chooses their
-- password; the member is created then and the invite deleted. A resend
-- replaces the hash, so the earlier link is dead.
CREATE TABLE invites (
    org_id     TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL,
    email      TEXT NOT NULL,
    name       TEXT NOT NULL,
    role       TEXT NOT NULL CHECK (role IN ('member', 'admin')),
    token_hash TEXT NOT NULL,
    invited_by TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    sent_at    TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (org_id, user_id)
);
CREATE UNIQUE INDEX invites_token ON invites (token_hash);
CREATE UNIQUE INDEX invites_email ON invites (org_id, email);

-- A mailed link that sets a member's password once, before expires_at;
-- stored only as its hash, deleted when used.
CREATE TABLE password_resets (
    token_hash TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);
CREATE INDEX password_resets_user ON password_resets (org_id, user_id, created_at);

-- Every "forgot password" request, whether or not its account exists, by
-- a hash of the account asked for and by client address: the limits count
-- them the same either way, so that they reveal nothing.
CREATE TABLE reset_requests (
    account      TEXT NOT NULL,
    client_addr  TEXT NOT NULL,
    requested_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX reset_requests_account ON reset_requests (account, requested_at);
CREATE INDEX reset_requests_addr ON reset_requests (client_addr, requested_at);
