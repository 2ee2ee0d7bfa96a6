ALTER TABLE platform_outbox DROP COLUMN trace_context;
