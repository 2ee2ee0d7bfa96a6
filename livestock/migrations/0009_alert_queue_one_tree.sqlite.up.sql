-- The alert queue as one b-tree: a rowid table with its primary key index and
-- the (queued_at) index was three trees, each a page written into the WAL by
-- every create (and copied back at checkpoint). Keyed by the listing id alone,
-- without a rowid, a create writes one page. The runner reads the queue in id
-- order: it drains the whole queue each pass, so the order is not a promise,
-- and new listings' ids are UUIDv7 (time-ordered), which keeps the inserts at
-- the tree's right edge.
CREATE TABLE livestock_alert_queue_v2 (
    listing_id TEXT PRIMARY KEY,
    queued_at TIMESTAMPTZ NOT NULL
) WITHOUT ROWID;

INSERT INTO livestock_alert_queue_v2 (listing_id, queued_at)
    SELECT listing_id, queued_at FROM livestock_alert_queue;

DROP TABLE livestock_alert_queue;

ALTER TABLE livestock_alert_queue_v2 RENAME TO livestock_alert_queue;
