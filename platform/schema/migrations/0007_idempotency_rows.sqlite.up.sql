-- The keys' rows move to an ordinary (rowid) table, without the expiry index.
-- Each key's row is written once, with its answer, in the transaction of its
-- change (platform/idempotency). In the WITHOUT ROWID table a row of a few
-- hundred bytes went to a random leaf of the primary key's tree, which split
-- every few inserts (a third of the insert's CPU, and more pages in the WAL);
-- here it is appended, and only the scope's index entry (about 80 bytes) goes
-- to a random leaf. The expiry index cost a second tree per write to serve one
-- purge every idempotency.purge_interval, which scans the table instead.
CREATE TABLE platform_idempotency_rows (
    scope         TEXT NOT NULL UNIQUE,
    request_hash  TEXT NOT NULL,
    owner         TEXT NOT NULL DEFAULT '',
    state         TEXT NOT NULL,
    status        INTEGER NOT NULL DEFAULT 0,
    header        TEXT NOT NULL DEFAULT '',
    body          BLOB,
    lease_until   TIMESTAMPTZ NOT NULL,
    expires_at    TIMESTAMPTZ NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL
);
INSERT INTO platform_idempotency_rows
    (scope, request_hash, owner, state, status, header, body, lease_until, expires_at, created_at)
    SELECT scope, request_hash, owner, state, status, header, body, lease_until, expires_at, created_at
    FROM platform_idempotency ORDER BY created_at;
DROP TABLE platform_idempotency;
ALTER TABLE platform_idempotency_rows RENAME TO platform_idempotency;
