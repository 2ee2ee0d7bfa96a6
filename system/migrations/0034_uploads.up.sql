-- Resumable uploads (tus 1.0.0, internal/files/resumable.go). One row per
-- upload: the fields it will be filed under, how many bytes of length have
-- arrived (received), the lease of the replica writing it now, and, once
-- complete, the file it became. Its bytes are chunk objects in the file store
-- (system_upload_parts), so any replica can carry on after a restart.
CREATE TABLE system_uploads (
    id               TEXT PRIMARY KEY,
    user_id          TEXT NOT NULL,
    bucket           TEXT NOT NULL,
    type             TEXT NOT NULL,
    name             TEXT NOT NULL,
    organisation_id  TEXT NOT NULL DEFAULT '',
    organisations    TEXT NOT NULL DEFAULT '[]',
    metadata         TEXT NOT NULL DEFAULT '',
    length           BIGINT NOT NULL,
    received         BIGINT NOT NULL DEFAULT 0,
    parts            INTEGER NOT NULL DEFAULT 0,
    file_id          TEXT NOT NULL DEFAULT '',
    lease_token      TEXT NOT NULL DEFAULT '',
    lease_until      TIMESTAMPTZ,
    created_at       TIMESTAMPTZ NOT NULL,
    expires_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX system_uploads_expires ON system_uploads (expires_at);

-- The chunks of an upload in order: seq counts from 0, key is the object in
-- the file store (named with the lease that wrote it, so that a writer whose
-- lease was taken over never overwrites the next writer's chunk).
CREATE TABLE system_upload_parts (
    upload_id  TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    key        TEXT NOT NULL,
    size       BIGINT NOT NULL,
    PRIMARY KEY (upload_id, seq)
);
