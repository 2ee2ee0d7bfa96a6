-- The expiry index cost every keyed write a second tree to write (and on
-- SQLite a page of the WAL per commit) to serve one purge every
-- idempotency.purge_interval. The purge scans the table instead: a few
-- hundred milliseconds per million keys, off the request path.
DROP INDEX platform_idempotency_expires;
