-- File records of platform/filestore: the bytes live in the blob store under
-- storage_key; this row says who may read them and whether they are active.
-- Files are only ever looked up by id (the primary key): no other index.
CREATE TABLE platform_files (
    id               TEXT PRIMARY KEY,
    bucket           TEXT NOT NULL,
    type             TEXT NOT NULL,
    name             TEXT NOT NULL,
    storage_key      TEXT NOT NULL,
    hash             TEXT NOT NULL,
    content_type     TEXT NOT NULL,
    size             BIGINT NOT NULL,
    user_id          TEXT NOT NULL,
    user_name        TEXT NOT NULL DEFAULT '',
    organisation_id  TEXT NOT NULL,
    -- JSON array of further organisation ids whose members may read the file.
    organisations    TEXT NOT NULL DEFAULT '[]',
    -- JSON array of tags.
    tags             TEXT NOT NULL DEFAULT '[]',
    status           TEXT NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    archived_at      TIMESTAMPTZ,
    archived_by      TEXT NOT NULL DEFAULT ''
);
