CREATE TABLE livestock_alert_queue_v1 (
    listing_id TEXT PRIMARY KEY,
    queued_at TIMESTAMPTZ NOT NULL
);

INSERT INTO livestock_alert_queue_v1 (listing_id, queued_at)
    SELECT listing_id, queued_at FROM livestock_alert_queue;

DROP TABLE livestock_alert_queue;

ALTER TABLE livestock_alert_queue_v1 RENAME TO livestock_alert_queue;

CREATE INDEX livestock_alert_queue_age ON livestock_alert_queue (queued_at, listing_id);
