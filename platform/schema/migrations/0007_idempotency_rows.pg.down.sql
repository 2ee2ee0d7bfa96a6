CREATE INDEX platform_idempotency_expires ON platform_idempotency (expires_at);
