// Package telemetry owns distributed tracing: an OpenTelemetry tracer provider
// that exports over OTLP/HTTP when an endpoint is configured, and the
// instrumentations of the libraries the platform uses (gin, bun, go-redis,
// outgoing net/http). With no endpoint tracing is off: every Instrument*
// method installs nothing, so requests pay nothing for it.
//
// With the platform's sampler (Sampler) a request's sampling is decided
// before any instrumentation runs (Gin): an unsampled request gets a trace
// id for its log lines and its outbox events, and no instrumentation does
// any work for it (the server span's attributes, the spans of its queries
// and calls). Recording nine requests in ten only to drop them cost a third
// more CPU on a cached read (BenchmarkTracing).
//
// A *Tracing is nil-safe: a nil value is tracing off.
package telemetry

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agritrade/api/platform/config"
	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/extra/bunotel"
	"github.com/uptrace/bun/schema"
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
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of the spans the platform starts itself.
const ScopeName = "github.com/agritrade/api/platform"

// Tracing is the process's tracing: a provider and how trace context travels.
type Tracing struct {
	tp      trace.TracerProvider
	service string
	// presampled: tp samples with Sampler(ratio), so sampling is decided
	// before the instrumentations run and they skip unsampled work (gated
	// is tp for them). Otherwise (New, OTEL_TRACES_SAMPLER) the sampler is
	// not known and every request runs them, as the SDK decides per span.
	presampled bool
	sampling   *Sampling
	gated      trace.TracerProvider
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
// The sampler is parent-based with otel.sample_ratio of new traces recorded,
// at most otel.max_traces_per_second of them (see Sampling); a caller's
// sampled traceparent is always continued, so traces across services stay
// whole. The standard OTEL_TRACES_SAMPLER, when set, replaces it (the SDK
// reads it when no sampler is given); requests then pay for the
// instrumentations whether sampled or not (see New). It also becomes the
// global provider and propagator, for libraries that only know those.
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
	// OTEL_TRACES_SAMPLER may name any sampler (not parent-based, remote,
	// one the SDK resolves in ways of its own): it cannot be decided ahead,
	// so requests then run the instrumentations and the SDK decides.
	envSampler := strings.TrimSpace(os.Getenv("OTEL_TRACES_SAMPLER")) != ""
	sampling := NewSampling(cfg.SampleRatio, cfg.MaxTracesPerSecond)
	if !envSampler {
		tpOpts = append(tpOpts, sdktrace.WithSampler(sampling.Sampler()))
	}
	tp := sdktrace.NewTracerProvider(tpOpts...)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagator)
	var t *Tracing
	if envSampler {
		t = New(tp, service)
	} else {
		t = NewSampled(tp, service, sampling)
	}
	t.shutdown = tp.Shutdown
	return t, nil
}

// Sampling is how the platform chooses new traces: ratio of them, and at
// most maxPerSecond a second (per process) whatever the traffic.
//
// Why a limit as well as a ratio: a sampled request costs about as much CPU
// again as a cached read (the server span's attributes, the SDK's span, the
// OTLP encoding, the garbage: BenchmarkTracing at ratio 1), so with a ratio
// alone tracing's cost grows with the traffic, and is largest when the
// replica is busiest. With the limit it is bounded: 100 traces a second is
// under 1% of a core, and still far more traces of every route than anyone
// reads. Below limit/ratio requests a second (1,000 at the defaults) the
// ratio alone decides. A caller's sampled traceparent is never limited: a
// trace another service started stays whole.
type Sampling struct {
	ratio sdktrace.Sampler
	draw  float64
	limit *rateLimit // nil: no limit
}

// NewSampling answers ratio of new traces, at most maxPerSecond a second
// (0: no limit).
func NewSampling(ratio, maxPerSecond float64) *Sampling {
	s := &Sampling{ratio: sdktrace.TraceIDRatioBased(ratio), draw: ratio}
	if maxPerSecond > 0 {
		s.limit = newRateLimit(maxPerSecond)
	}
	return s
}

// Sampler is the platform's sampler: parent-based (a caller's decision is
// kept, the children of an unsampled span are not recorded), with the new
// traces chosen by s. A new trace whose request Gin decided to sample is
// recorded without asking again: the decision is taken once.
func (s *Sampling) Sampler() sdktrace.Sampler {
	return sdktrace.ParentBased(rootSampler{s: s})
}

// newTrace decides whether a new trace a request starts is recorded.
func (s *Sampling) newTrace() bool {
	draw := s.draw >= 1 || s.draw > 0 && rand.Float64() < s.draw //nolint:gosec // a sampling draw, no secret
	return draw && s.limit.allow()
}

// sampledKey marks the context of a request Gin decided to sample.
type sampledKey struct{}

type rootSampler struct{ s *Sampling }

func (r rootSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if p.ParentContext != nil && p.ParentContext.Value(sampledKey{}) != nil {
		return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
	}
	res := r.s.ratio.ShouldSample(p)
	if res.Decision == sdktrace.RecordAndSample && !r.s.limit.allow() {
		res.Decision = sdktrace.Drop
	}
	return res
}

func (r rootSampler) Description() string {
	d := "PresampledOr{" + r.s.ratio.Description()
	if r.s.limit != nil {
		d += fmt.Sprintf(",MaxPerSecond:%g", r.s.limit.perSecond)
	}
	return d + "}"
}

// rateLimit lets through at most perSecond events a second, with a burst of
// one second's worth, without a lock: the generic cell rate algorithm keeps
// one number, the time the next event is due, and a caller lets itself
// through by moving it on by one interval if it is not more than the burst
// ahead of now. A nil *rateLimit lets everything through.
type rateLimit struct {
	perSecond float64
	interval  int64 // ns between events
	burst     int64 // ns the due time may run ahead of now
	due       atomic.Int64
	epoch     time.Time // due is ns since epoch, on the monotonic clock
}

func newRateLimit(perSecond float64) *rateLimit {
	iv := int64(float64(time.Second) / perSecond)
	if iv < 1 {
		iv = 1
	}
	return &rateLimit{perSecond: perSecond, interval: iv, burst: int64(time.Second), epoch: time.Now()}
}

func (l *rateLimit) allow() bool {
	if l == nil {
		return true
	}
	now := int64(time.Since(l.epoch))
	for {
		due := l.due.Load()
		next := max(due, now) + l.interval
		if next-now > l.burst {
			return false
		}
		if l.due.CompareAndSwap(due, next) {
			return true
		}
	}
}

// New wraps a provider the caller owns (tests: an SDK provider over
// tracetest) whose sampler is its own: every request runs the
// instrumentations and the provider decides.
func New(tp trace.TracerProvider, service string) *Tracing {
	return &Tracing{tp: tp, service: service, gated: tp}
}

// NewSampled wraps a provider that samples with s.Sampler() (what Open
// makes; tests: an SDK provider over tracetest): each request's sampling is
// decided before the instrumentations run, and they do nothing for an
// unsampled one.
func NewSampled(tp trace.TracerProvider, service string, s *Sampling) *Tracing {
	return &Tracing{tp: tp, service: service, presampled: true, sampling: s, gated: gatedProvider{tp: tp}}
}

// Enabled tells whether spans are recorded.
func (t *Tracing) Enabled() bool { return t != nil && t.tp != nil }

// TracerProvider answers the provider; a no-op one when tracing is off.
func (t *Tracing) TracerProvider() trace.TracerProvider {
	if !t.Enabled() {
		return noop.NewTracerProvider()
	}
	return t.gated
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
//
// With the platform's sampler it decides first, as the sampler would: a
// caller's traceparent is followed (sampled or not), a new trace is sampled
// at the ratio. Only a sampled request runs otelgin (the server span); an
// unsampled one gets a span context that is not sampled, with the caller's
// trace id or a new one, so that its log lines and outbox events still name
// a trace, and under which no instrumentation records anything.
func (t *Tracing) Gin() gin.HandlerFunc {
	if !t.Enabled() {
		return nil
	}
	server := otelgin.Middleware(t.service,
		otelgin.WithTracerProvider(t.tp), otelgin.WithPropagators(propagator), otelgin.WithMeterProvider(metricsOff),
		otelgin.WithFilter(func(r *http.Request) bool { return !untracedPath(r.URL.Path) }))
	if !t.presampled {
		return server
	}
	return func(c *gin.Context) {
		if untracedPath(c.Request.URL.Path) {
			c.Next()
			return
		}
		ctx := c.Request.Context()
		if h := c.Request.Header; h["Traceparent"] != nil || h["Baggage"] != nil {
			// Only a caller's context is worth extracting: the propagators
			// look each of their headers up by a name canonicalised anew.
			ctx = propagator.Extract(ctx, propagation.HeaderCarrier(h))
		}
		parent := trace.SpanContextFromContext(ctx)
		switch {
		case parent.IsSampled():
			server(c) // extracts the caller's traceparent again: once a sampled request
			return
		case !parent.IsValid() && t.sampling.newTrace():
			c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), sampledKey{}, true))
			server(c)
			return
		}
		sc := trace.SpanContextConfig{TraceID: parent.TraceID(), SpanID: newSpanID(), TraceState: parent.TraceState()}
		if !parent.IsValid() {
			sc.TraceID = newTraceID()
		}
		c.Request = c.Request.WithContext(trace.ContextWithSpanContext(ctx, trace.NewSpanContext(sc)))
		c.Next()
	}
}

func untracedPath(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/metrics":
		return true
	}
	return false
}

// newTraceID and newSpanID are random and not zero, as W3C asks. Ids are
// not secrets: the runtime's generator serves, without the lock of the SDK's.
func newTraceID() trace.TraceID {
	var id trace.TraceID
	for !id.IsValid() {
		binary.LittleEndian.PutUint64(id[:8], rand.Uint64()) //nolint:gosec // an id, no secret
		binary.LittleEndian.PutUint64(id[8:], rand.Uint64()) //nolint:gosec // an id, no secret
	}
	return id
}

func newSpanID() trace.SpanID {
	var id trace.SpanID
	for !id.IsValid() {
		binary.LittleEndian.PutUint64(id[:], rand.Uint64()) //nolint:gosec // an id, no secret
	}
	return id
}

// unsampled tells whether span is a valid span that records nothing and is
// not sampled: under the platform's (parent-based) sampler none of its
// children would be recorded either.
func unsampled(span trace.Span) bool {
	sc := span.SpanContext()
	return sc.IsValid() && !sc.IsSampled() && !span.IsRecording()
}

// gatedProvider gives the instrumentations tracers that start nothing under
// an unsampled span: the span answered is that span, so ending it is a
// no-op, and an outgoing call carries its traceparent (not sampled).
// Starting a child the sampler drops would otherwise cost an id, a sampler
// call and a context. Valid only with the platform's sampler.
type gatedProvider struct {
	embedded.TracerProvider
	tp trace.TracerProvider
}

func (p gatedProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return gatedTracer{tr: p.tp.Tracer(name, opts...)}
}

type gatedTracer struct {
	embedded.Tracer
	tr trace.Tracer
}

func (t gatedTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if span := trace.SpanFromContext(ctx); unsampled(span) {
		return ctx, span
	}
	return t.tr.Start(ctx, name, opts...)
}

// InstrumentDB answers db with a span per query (db itself when off): a
// copy over the same connection pool.
func (t *Tracing) InstrumentDB(db *bun.DB) *bun.DB {
	if !t.Enabled() {
		return db
	}
	hook := bunotel.NewQueryHook(bunotel.WithTracerProvider(t.tp), bunotel.WithMeterProvider(metricsOff))
	return db.WithQueryHook(queryHook{QueryHook: hook, gated: t.presampled})
}

// queryHook is bunotel's hook, which it calls for every query. gated: it
// skips the queries of an unsampled request or poll, as bunotel builds its
// attributes before it asks whether the span records.
type queryHook struct {
	*bunotel.QueryHook
	gated bool
}

func (h queryHook) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	if h.gated && unsampled(trace.SpanFromContext(ctx)) {
		return ctx
	}
	qctx := h.QueryHook.BeforeQuery(ctx, e)
	if e.Query == "BEGIN" {
		// bun keeps the context BEGIN's hook answers as its transaction's,
		// so the transaction's COMMIT or ROLLBACK would be a child of BEGIN
		// (a span already ended). BEGIN's span travels under a key of its
		// own instead, for AfterQuery, and the caller's span stays current.
		return context.WithValue(ctx, beginSpanKey{}, trace.SpanFromContext(qctx))
	}
	return qctx
}

// beginSpanKey holds a BEGIN's span from BeforeQuery to AfterQuery.
type beginSpanKey struct{}

func (h queryHook) AfterQuery(ctx context.Context, e *bun.QueryEvent) {
	if begin, ok := ctx.Value(beginSpanKey{}).(trace.Span); ok && e.Query == "BEGIN" {
		ctx = trace.ContextWithSpan(ctx, begin)
	}
	span := trace.SpanFromContext(ctx)
	if h.gated && unsampled(span) {
		return
	}
	if span.IsRecording() {
		// bunotel names the first function outside bun on the stack as the
		// query's caller (code.*): that is this hook. The span shows the
		// code that asked for the query instead.
		ctx = trace.ContextWithSpan(ctx, callerSpan{Span: span, caller: queryCaller()})
	}
	if _, raw := e.IQuery.(*bun.RawQuery); raw {
		// bun names every raw query SELECT: the span takes the verb of
		// the statement's own text (db.ExecPrepared's INSERT), which,
		// as the query's template, keeps its placeholders.
		ev := *e
		ev.IQuery = nil
		if b, err := e.IQuery.AppendQuery(schema.NewNopQueryGen(), nil); err == nil {
			ev.QueryTemplate = string(b)
		}
		e = &ev
	}
	h.QueryHook.AfterQuery(ctx, e)
}

// callerSpan is a query's span as bunotel sees it: its code.* attributes
// are replaced by caller's.
type callerSpan struct {
	trace.Span
	caller [3]attribute.KeyValue
}

func (s callerSpan) SetAttributes(kv ...attribute.KeyValue) {
	for i, a := range kv {
		switch a.Key {
		case "code.function":
			kv[i] = s.caller[0]
		case "code.filepath":
			kv[i] = s.caller[1]
		case "code.lineno":
			kv[i] = s.caller[2]
		}
	}
	s.Span.SetAttributes(kv...)
}

// queryCaller answers the code.* attributes of the function that asked for
// the query being traced: the first on the stack outside bun and the
// platform's own database layers (db's Conn, InTx and prepared statements,
// this package's hook).
func queryCaller() [3]attribute.KeyValue {
	var pcs [24]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs[:])])
	var f runtime.Frame
	for more := true; more; {
		f, more = frames.Next()
		if !strings.HasPrefix(f.Function, "github.com/uptrace/bun") &&
			!strings.HasPrefix(f.Function, "github.com/agritrade/api/platform/db.") &&
			!strings.HasPrefix(f.Function, "github.com/agritrade/api/platform/telemetry.") &&
			!strings.HasPrefix(f.Function, "database/sql.") {
			break
		}
	}
	fn := f.Function
	if i := strings.LastIndexByte(fn, '/'); i >= 0 {
		fn = fn[i+1:]
	}
	return [3]attribute.KeyValue{
		attribute.String("code.function", fn), attribute.String("code.filepath", f.File), attribute.Int("code.lineno", f.Line),
	}
}

// InstrumentRedis adds a span per command to the client (nothing when off).
func (t *Tracing) InstrumentRedis(rdb *redis.Client) error {
	if !t.Enabled() || rdb == nil {
		return nil
	}
	return redisotel.InstrumentTracing(rdb, redisotel.WithTracerProvider(t.gated))
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
	return otelhttp.NewTransport(base, otelhttp.WithTracerProvider(t.gated), otelhttp.WithPropagators(propagator),
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

// Untraced answers ctx under which spans are not recorded (with a
// parent-based sampler; with the platform's, not even started): for background polls (the outbox claim every
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
