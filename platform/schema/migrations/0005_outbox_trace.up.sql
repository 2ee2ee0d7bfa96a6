-- The W3C trace context (traceparent, and tracestate after a newline) of the
-- request that enqueued the event, so that its delivery span is a child of
-- that request's span (platform/telemetry); empty when tracing is off.
ALTER TABLE platform_outbox ADD COLUMN trace_context TEXT NOT NULL DEFAULT '';
