// Package telemetry owns distributed tracing: an OpenTelemetry tracer provider
// that exports over OTLP/HTTP when an endpoint is configured, and the
// instrumentations of the libraries the platform uses (gin, bun, go-redis,
// outgoing net/http). With no endpoint tracing is off: every Instrument*
// method installs nothing, so requests pay nothing for it.
//
// A *Tracing is nil-safe: a nil value is tracing off.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/agritrade/api/platform/config"
	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/extra/bunotel"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of the spans the platform starts itself.
const ScopeName = "github.com/agritrade/api/platform"

// Tracing is the process's tracing: a provider and how trace context travels.
type Tracing struct {
	tp      trace.TracerProvider
	service string
	// shutdown flushes and stops the exporter the provider owns (Open only).
	shutdown func(context.Context) error
}

// propagator reads and writes W3C traceparent/tracestate and baggage.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// metricsOff keeps the instrumentations' own OpenTelemetry metrics out: the
// service's metrics are Prometheus ones, and recording both would cost twice.
var metricsOff = metricnoop.NewMeterProvider()

// Endpoint answers the OTLP/HTTP endpoint that switches tracing on: otel.endpoint,
// else the standard OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT.
func Endpoint(cfg config.Otel) string {
	if e := strings.TrimSpace(cfg.Endpoint); e != "" {
		return e
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if e := strings.TrimSpace(os.Getenv(k)); e != "" {
			return e
		}
	}
	return ""
}

// Open starts tracing when an endpoint is configured (see Endpoint) and
// answers nil (off) otherwise. The spans go out in batches over OTLP/HTTP.
// The sampler is parent-based with otel.sample_ratio of new traces recorded:
// recording and exporting every request's spans costs more CPU than serving
// a cached document does (BenchmarkTracing), while a tenth of the traffic
// still shows every route's latency and errors; a caller's sampled
// traceparent is always continued, so traces across services stay whole.
// The standard OTEL_TRACES_SAMPLER, when set, replaces it (the SDK reads it
// when no sampler is given). It also becomes the global provider and
// propagator, for libraries that only know those.
func Open(ctx context.Context, cfg config.Otel, version string) (*Tracing, error) {
	if Endpoint(cfg) == "" {
		return nil, nil
	}
	var opts []otlptracehttp.Option
	if e := strings.TrimSpace(cfg.Endpoint); e != "" {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New("otel.endpoint must be an absolute http(s) URL (http://collector:4318)")
		}
		// Like OTEL_EXPORTER_OTLP_ENDPOINT, a base URL gets the signal's path.
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("otel exporter: %w", err)
	}
	service := cfg.ServiceName
	if service == "" {
		service = "agritrade"
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", service), attribute.String("service.version", version)))
	if err != nil {
		return nil, fmt.Errorf("otel resource: %w", err)
	}
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if strings.TrimSpace(os.Getenv("OTEL_TRACES_SAMPLER")) == "" {
		tpOpts = append(tpOpts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))))
	}
	tp := sdktrace.NewTracerProvider(tpOpts...)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagator)
	return &Tracing{tp: tp, service: service, shutdown: tp.Shutdown}, nil
}

// New wraps a provider the caller owns (tests: an SDK provider over tracetest).
func New(tp trace.TracerProvider, service string) *Tracing {
	return &Tracing{tp: tp, service: service}
}

// Enabled tells whether spans are recorded.
func (t *Tracing) Enabled() bool { return t != nil && t.tp != nil }

// TracerProvider answers the provider; a no-op one when tracing is off.
func (t *Tracing) TracerProvider() trace.TracerProvider {
	if !t.Enabled() {
		return noop.NewTracerProvider()
	}
	return t.tp
}

// Tracer answers the tracer of the platform's own spans.
func (t *Tracing) Tracer() trace.Tracer { return t.TracerProvider().Tracer(ScopeName) }

// Shutdown flushes the spans still buffered and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// Gin answers the server-span middleware (W3C traceparent accepted), or nil
// when tracing is off. Probes and the metrics scrape make no spans.
func (t *Tracing) Gin() gin.HandlerFunc {
	if !t.Enabled() {
		return nil
	}
	return otelgin.Middleware(t.service,
		otelgin.WithTracerProvider(t.tp), otelgin.WithPropagators(propagator), otelgin.WithMeterProvider(metricsOff),
		otelgin.WithFilter(func(r *http.Request) bool {
			switch r.URL.Path {
			case "/healthz", "/readyz", "/metrics":
				return false
			}
			return true
		}))
}

// InstrumentDB answers db with a span per query (db itself when off): a
// copy over the same connection pool.
func (t *Tracing) InstrumentDB(db *bun.DB) *bun.DB {
	if !t.Enabled() {
		return db
	}
	return db.WithQueryHook(bunotel.NewQueryHook(bunotel.WithTracerProvider(t.tp), bunotel.WithMeterProvider(metricsOff)))
}

// InstrumentRedis adds a span per command to the client (nothing when off).
func (t *Tracing) InstrumentRedis(rdb *redis.Client) error {
	if !t.Enabled() || rdb == nil {
		return nil
	}
	return redisotel.InstrumentTracing(rdb, redisotel.WithTracerProvider(t.tp))
}

// Transport wraps an outgoing HTTP transport (nil: the default one) so that
// each call is a client span and carries traceparent; base unchanged when off.
func (t *Tracing) Transport(base http.RoundTripper) http.RoundTripper {
	if !t.Enabled() {
		return base
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return otelhttp.NewTransport(base, otelhttp.WithTracerProvider(t.tp), otelhttp.WithPropagators(propagator),
		otelhttp.WithMeterProvider(metricsOff))
}

// Inject answers the W3C traceparent (and tracestate, after a newline) of the
// span in ctx, for work that continues elsewhere later (the outbox); empty
// when ctx carries no sampled-or-not valid span.
func Inject(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	if ts := c.Get("tracestate"); ts != "" {
		return c.Get("traceparent") + "\n" + ts
	}
	return c.Get("traceparent")
}

// Extract answers ctx with the remote span context Inject stored, so that a
// span started on it is a child of the span that was current at Inject.
func Extract(ctx context.Context, stored string) context.Context {
	if stored == "" {
		return ctx
	}
	parent, state, _ := strings.Cut(stored, "\n")
	c := propagation.MapCarrier{"traceparent": parent}
	if state != "" {
		c["tracestate"] = state
	}
	return propagation.TraceContext{}.Extract(ctx, c)
}

// Untraced answers ctx under which spans are not recorded (with the default,
// parent-based sampler): for background polls (the outbox claim every
// second, scrape-time queries), which would otherwise each start a trace of
// one query and bury the traces of requests.
func Untraced(ctx context.Context) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	return trace.ContextWithSpanContext(ctx, untracedParent)
}

// untracedParent is a valid, not sampled parent: children inherit "not sampled".
var untracedParent = trace.NewSpanContext(trace.SpanContextConfig{
	TraceID: trace.TraceID{0x61, 0x67, 0x72, 0x69, 0x74, 0x72, 0x61, 0x64, 0x65, 1},
	SpanID:  trace.SpanID{0x62, 0x67, 1},
})
