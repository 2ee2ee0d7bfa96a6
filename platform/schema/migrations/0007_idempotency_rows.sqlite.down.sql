CREATE TABLE platform_idempotency_keyed (
    scope         TEXT PRIMARY KEY,
    request_hash  TEXT NOT NULL,
    owner         TEXT NOT NULL DEFAULT '',
    state         TEXT NOT NULL,
    status        INTEGER NOT NULL DEFAULT 0,
    header        TEXT NOT NULL DEFAULT '',
    body          BLOB,
    lease_until   TIMESTAMPTZ NOT NULL,
    expires_at    TIMESTAMPTZ NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL
) WITHOUT ROWID;
INSERT INTO platform_idempotency_keyed SELECT scope, request_hash, owner, state, status, header, body, lease_until, expires_at, created_at FROM platform_idempotency;
DROP TABLE platform_idempotency;
ALTER TABLE platform_idempotency_keyed RENAME TO platform_idempotency;
CREATE INDEX platform_idempotency_expires ON platform_idempotency (expires_at);
