DROP TABLE platform_idempotency;
