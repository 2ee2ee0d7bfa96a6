-- The event log of the live stream (platform/events): one row per event,
-- written in the transaction of the change, and the audiences that may see it
-- (user:<id>, org:<id>). A stream replays from its Last-Event-ID through the
-- audience index; rows older than events.retention are purged.
CREATE TABLE platform_events (
    id          BIGSERIAL PRIMARY KEY,
    type        TEXT NOT NULL,
    data        TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX platform_events_created ON platform_events (created_at);
CREATE TABLE platform_event_audiences (
    audience  TEXT NOT NULL,
    event_id  BIGINT NOT NULL REFERENCES platform_events (id) ON DELETE CASCADE,
    PRIMARY KEY (audience, event_id)
);
CREATE INDEX platform_event_audiences_event ON platform_event_audiences (event_id);
