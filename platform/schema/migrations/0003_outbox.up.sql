-- Transactional outbox (platform/outbox): a notification is inserted in the
-- transaction of the change that causes it; dispatchers on every replica claim
-- due rows and deliver them to the configured channels at least once.
CREATE TABLE platform_outbox (
    id             TEXT PRIMARY KEY,
    type           TEXT NOT NULL,
    recipients     TEXT NOT NULL DEFAULT '[]',
    subject        TEXT NOT NULL DEFAULT '',
    body           TEXT NOT NULL DEFAULT '',
    data           TEXT NOT NULL DEFAULT 'null',
    status         TEXT NOT NULL DEFAULT 'pending',
    attempts       INTEGER NOT NULL DEFAULT 0,
    due_at         TIMESTAMPTZ NOT NULL,
    claimed_until  TIMESTAMPTZ,
    claimed_by     TEXT NOT NULL DEFAULT '',
    done_channels  TEXT NOT NULL DEFAULT '',
    last_error     TEXT NOT NULL DEFAULT '',
    created_at     TIMESTAMPTZ NOT NULL,
    delivered_at   TIMESTAMPTZ
);
-- The claim query scans pending rows by due time only.
CREATE INDEX platform_outbox_pending_due ON platform_outbox (due_at) WHERE status = 'pending';
-- The retention purge scans delivered rows by delivery time only.
CREATE INDEX platform_outbox_delivered_at ON platform_outbox (delivered_at) WHERE status = 'delivered';
-- Operators and tests look events up by type, newest first.
CREATE INDEX platform_outbox_type_created ON platform_outbox (type, created_at);
