DROP TABLE platform_event_audiences;
DROP TABLE platform_events;
