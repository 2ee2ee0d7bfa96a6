-- Answers kept for Idempotency-Key (platform/idempotency). One row per scope:
-- the SHA-256 of (token sub, method, path, key), so the primary key is short
-- whatever the path and key. A request inserts its row 'running' before it
-- runs (a second request with the same scope meets the primary key), renews
-- lease_until while it runs and turns it 'done' with its answer; a 'running'
-- row whose lease has passed (its replica died) is taken over. Rows past
-- expires_at (idempotency.ttl) are purged by every replica.
-- WITHOUT ROWID: the rows live in the primary key's tree, so a write
-- touches one tree (and the expiry index on insert), not two.
CREATE TABLE platform_idempotency (
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
CREATE INDEX platform_idempotency_expires ON platform_idempotency (expires_at);
