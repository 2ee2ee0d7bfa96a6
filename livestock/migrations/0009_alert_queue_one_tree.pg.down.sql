CREATE INDEX livestock_alert_queue_age ON livestock_alert_queue (queued_at, listing_id);
