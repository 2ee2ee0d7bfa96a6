DROP TABLE platform_outbox;
