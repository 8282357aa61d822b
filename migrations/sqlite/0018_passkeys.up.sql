-- A person's passkeys (WebAuthn credentials), each named. id is the
-- credential id (base64url), unique across the server: a discoverable
-- sign-in finds the passkey by it. user_handle is the random handle the
-- authenticator returns with a discoverable assertion, the same for every
-- passkey of one person. credential is the library's credential record
-- (public key, flags with the backup bits, authenticator with its sign
-- counter), rewritten after every use; sign_count repeats the counter for
-- reading. clone_seen_at marks the last assertion refused because its
-- counter went back (a cloned credential).
CREATE TABLE passkeys (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    user_handle   TEXT NOT NULL,
    name          TEXT NOT NULL,
    credential    TEXT NOT NULL,
    sign_count    BIGINT NOT NULL DEFAULT 0,
    created_at    TIMESTAMP NOT NULL,
    last_used_at  TIMESTAMP,
    clone_seen_at TIMESTAMP,
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);
CREATE INDEX passkeys_user ON passkeys (org_id, user_id);
CREATE INDEX passkeys_handle ON passkeys (user_handle);

-- A passkey ceremony begun and not yet finished: the challenge and what
-- the finish checks, kept on the server under the hash of the random value
-- of the browser's cookie, used once.
CREATE TABLE passkey_ceremonies (
    hash       TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,
    org_id     TEXT NOT NULL DEFAULT '',
    user_id    TEXT NOT NULL DEFAULT '',
    data       TEXT NOT NULL,
    expires_at TIMESTAMP NOT NULL
);
CREATE INDEX passkey_ceremonies_expiry ON passkey_ceremonies (expires_at);

-- A browser session's last passkey verification (at sign-in or when an
-- approval asked for one), and how it was begun ('password' or 'passkey').
ALTER TABLE web_sessions ADD COLUMN passkey_at TIMESTAMP;
ALTER TABLE web_sessions ADD COLUMN signed_in_with TEXT NOT NULL DEFAULT 'password';

-- A device cookie (OWASP's "slow down online guessing"): a browser where a
-- person signed in before holds one, naming the account; the password
-- checks from it have their own failure budget, apart from the account's.
CREATE TABLE device_cookies (
    hash       TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);
CREATE INDEX device_cookies_user ON device_cookies (org_id, user_id);

-- approval_factor: what an approval in the web app needs, 'session' (a
-- signed-in browser) or 'passkey' (a passkey verification of the last few
-- minutes); require_passkey: members are asked to add a passkey when they
-- sign in without one.
ALTER TABLE orgs ADD COLUMN approval_factor TEXT NOT NULL DEFAULT 'session';
ALTER TABLE orgs ADD COLUMN require_passkey BOOLEAN NOT NULL DEFAULT FALSE;

