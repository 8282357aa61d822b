-- SCIM groups (package scim): each group the identity provider pushes is
-- a private channel of the org whose members the provider keeps (package
-- channels holds the channel and its members). id is the channel's name,
-- made from the group's first displayName and kept when it changes;
-- display_key is the displayName lower-cased, unique per org, which a
-- list's filter compares; version counts the group's changes.
CREATE TABLE scim_groups (
    org_id       TEXT NOT NULL,
    id           TEXT NOT NULL,
    display_name TEXT NOT NULL,
    display_key  TEXT NOT NULL,
    external_id  TEXT NOT NULL DEFAULT '',
    version      INTEGER NOT NULL DEFAULT 1,
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (org_id, id),
    FOREIGN KEY (org_id, id) REFERENCES channels (org_id, name) ON DELETE CASCADE
);
CREATE UNIQUE INDEX scim_groups_display_name ON scim_groups (org_id, display_key);
