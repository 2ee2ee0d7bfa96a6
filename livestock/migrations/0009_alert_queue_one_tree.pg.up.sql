-- The runner reads the queue in listing id order, the primary key's (0009 on
-- SQLite, where the queue became one b-tree): the (queued_at) index has no
-- reader left, and each create no longer writes it.
DROP INDEX livestock_alert_queue_age;
