package logging

import (
	"context"

	"github.com/sirupsen/logrus"
	"go.opentelemetry.io/otel/trace"
)

// Fields the context hook adds to entries logged with a context.
const (
	TraceIDField   = "trace_id"
	SpanIDField    = "span_id"
	RequestIDField = "request_id"
)

type requestIDKey struct{}

// WithRequestID answers ctx carrying the request id, for the log entries of
// work the request starts that logs with this context.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID answers the request id ctx carries, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// contextHook ties an entry to its trace: an entry logged with a context
// (entry.WithContext) gets the trace and span ids of the span in it and the
// request id it carries. Hooks only fire for entries that are written, so
// entries below the level cost nothing here.
type contextHook struct{}

func (contextHook) Levels() []logrus.Level { return logrus.AllLevels }

func (contextHook) Fire(e *logrus.Entry) error {
	if e.Context == nil {
		return nil
	}
	if sc := trace.SpanContextFromContext(e.Context); sc.IsValid() {
		e.Data[TraceIDField] = sc.TraceID().String()
		e.Data[SpanIDField] = sc.SpanID().String()
	}
	if _, ok := e.Data[RequestIDField]; !ok {
		if id := RequestID(e.Context); id != "" {
			e.Data[RequestIDField] = id
		}
	}
	return nil
}

// Enabled tells whether l writes entries of level: hot paths ask before they
// build a line's fields (logrus allocates them, a copy of the map for each
// WithField, even for an entry below the level).
func Enabled(l logrus.FieldLogger, level logrus.Level) bool {
	switch x := l.(type) {
	case *logrus.Entry:
		return x.Logger.IsLevelEnabled(level)
	case *logrus.Logger:
		return x.IsLevelEnabled(level)
	}
	return true
}

// Debugging tells whether l writes debug entries (Enabled).
func Debugging(l logrus.FieldLogger) bool { return Enabled(l, logrus.DebugLevel) }

// Ctx answers l bound to ctx, so that the entry gets the trace, span and
// request ids of the request that logs it (the context hook); l itself when
// it cannot carry a context.
func Ctx(ctx context.Context, l logrus.FieldLogger) logrus.FieldLogger {
	if c, ok := l.(interface {
		WithContext(context.Context) *logrus.Entry
	}); ok && ctx != nil {
		return c.WithContext(ctx)
	}
	return l
}
