-- Listings that became active and still have to be matched against the saved
-- searches. The create (or publish) writes its row in its own transaction, so
-- no activation is lost; the alerts runner matches outside the write and
-- removes the row in the transaction that records the alerts.
CREATE TABLE livestock_alert_queue (
    listing_id TEXT PRIMARY KEY,
    queued_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX livestock_alert_queue_age ON livestock_alert_queue (queued_at, listing_id);

-- Activations made before the queue existed have been matched already.
