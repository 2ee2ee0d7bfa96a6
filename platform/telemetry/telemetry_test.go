package telemetry_test

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/telemetry"
	"github.com/agritrade/api/platform/telemetry/otlptest"
	"github.com/agritrade/api/platform/testkit"
	"github.com/gin-gonic/gin"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func clearOtelEnv(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_TRACES_SAMPLER", "")
}

// TestOffWithoutEndpoint: no endpoint, no tracing, and every instrumentation
// hands back what it was given.
func TestOffWithoutEndpoint(t *testing.T) {
	clearOtelEnv(t)
	tr, err := telemetry.Open(context.Background(), config.Otel{}, "1.0.0")
	if err != nil || tr != nil || tr.Enabled() {
		t.Fatalf("Open without endpoint: %v %v", tr, err)
	}
	if tr.Gin() != nil {
		t.Error("a gin middleware while off")
	}
	base := &http.Transport{}
	if got := tr.Transport(base); got != base {
		t.Error("the transport was wrapped while off")
	}
	if tr.Transport(nil) != nil {
		t.Error("a nil transport (the default) was replaced while off")
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestExportsOverOTLPHTTP: with otel.endpoint (or the standard variable) the
// spans reach a real OTLP/HTTP receiver as protobuf, with the service name.
func TestExportsOverOTLPHTTP(t *testing.T) {
	for _, how := range []string{"config", "env"} {
		t.Run(how, func(t *testing.T) {
			clearOtelEnv(t)
			recv := otlptest.Start(t)
			cfg := config.Otel{ServiceName: "agritrade-" + how, SampleRatio: 1}
			if how == "config" {
				cfg.Endpoint = recv.URL
			} else {
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
			}
			tr, err := telemetry.Open(context.Background(), cfg, "9.9.9")
			if err != nil || !tr.Enabled() {
				t.Fatalf("Open: %v %v", tr, err)
			}
			_, span := tr.Tracer().Start(context.Background(), "unit of work", trace.WithSpanKind(trace.SpanKindInternal))
			want := span.SpanContext()
			span.End()
			if err := tr.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			got, ok := recv.WaitFor("unit of work", 5*time.Second)
			if !ok {
				t.Fatalf("the receiver got no span; rejected %v", recv.Rejected())
			}
			if hex.EncodeToString(got.GetTraceId()) != want.TraceID().String() || hex.EncodeToString(got.GetSpanId()) != want.SpanID().String() {
				t.Errorf("received span %x/%x, want %s/%s", got.GetTraceId(), got.GetSpanId(), want.TraceID(), want.SpanID())
			}
			if got.Service != cfg.ServiceName {
				t.Errorf("service.name %q, want %q", got.Service, cfg.ServiceName)
			}
		})
	}
}

func TestBadEndpointIsRefused(t *testing.T) {
	clearOtelEnv(t)
	if _, err := telemetry.Open(context.Background(), config.Otel{Endpoint: "collector:4318"}, "1"); err == nil {
		t.Fatal("an endpoint without a scheme was accepted")
	}
}

// TestInjectExtractRoundTrip: what Inject stores, Extract turns back into the
// parent of the next span; nothing is stored without a span.
func TestInjectExtractRoundTrip(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	tr := telemetry.New(tp, "t")
	if got := telemetry.Inject(context.Background()); got != "" {
		t.Fatalf("Inject without a span: %q", got)
	}
	ctx, parent := tr.Tracer().Start(context.Background(), "request")
	stored := telemetry.Inject(ctx)
	parent.End()
	_, child := tr.Tracer().Start(telemetry.Extract(context.Background(), stored), "delivery")
	child.End()
	snap := spans.GetSpans().Snapshots()
	if len(snap) != 2 || snap[1].Parent().SpanID() != parent.SpanContext().SpanID() || snap[1].SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Fatalf("stored %q: spans %+v", stored, snap)
	}
}

// TestUntracedRecordsNothing: spans started under Untraced are not sampled.
func TestUntracedRecordsNothing(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tr := telemetry.New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)), "t")
	_, s := tr.Tracer().Start(telemetry.Untraced(context.Background()), "poll")
	s.End()
	if n := len(spans.GetSpans()); n != 0 || s.IsRecording() {
		t.Fatalf("%d spans recorded under Untraced", n)
	}
}

// TestTransportCarriesTraceparent: an outgoing call through the transport is
// a client span and the server sees its traceparent.
func TestTransportCarriesTraceparent(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tr := telemetry.New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)), "t")
	seen := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen <- r.Header.Get("traceparent") }))
	defer srv.Close()
	ctx, parent := tr.Tracer().Start(context.Background(), "caller")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	res, err := (&http.Client{Transport: tr.Transport(nil)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	parent.End()
	got := <-seen
	var client sdktrace.ReadOnlySpan
	for _, s := range spans.GetSpans().Snapshots() {
		if s.SpanKind() == trace.SpanKindClient {
			client = s
		}
	}
	if client == nil || client.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("no client span under the caller: %v", spans.GetSpans())
	}
	if want := "00-" + client.SpanContext().TraceID().String() + "-" + client.SpanContext().SpanID().String() + "-01"; got != want {
		t.Fatalf("traceparent %q, want %q", got, want)
	}
}

// TestSamplerIsParentBasedOnTheConfiguredRatio: at ratio 0 a new trace is not
// recorded but a caller's sampled parent is continued; OTEL_TRACES_SAMPLER,
// when set, replaces the ratio.
func TestSamplerIsParentBasedOnTheConfiguredRatio(t *testing.T) {
	sampledParent := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true,
	}))
	open := func(t *testing.T, ratio float64) *telemetry.Tracing {
		t.Helper()
		recv := otlptest.Start(t)
		tr, err := telemetry.Open(context.Background(), config.Otel{Endpoint: recv.URL, SampleRatio: ratio}, "1")
		if err != nil || !tr.Enabled() {
			t.Fatalf("Open: %v %v", tr, err)
		}
		t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
		return tr
	}
	sampled := func(tr *telemetry.Tracing, ctx context.Context) bool {
		_, span := tr.Tracer().Start(ctx, "work")
		defer span.End()
		return span.SpanContext().IsSampled()
	}
	t.Run("ratio_0", func(t *testing.T) {
		clearOtelEnv(t)
		tr := open(t, 0)
		if sampled(tr, context.Background()) {
			t.Error("a new trace was recorded at ratio 0")
		}
		if !sampled(tr, sampledParent) {
			t.Error("a caller's sampled trace was not continued")
		}
	})
	t.Run("ratio_1", func(t *testing.T) {
		clearOtelEnv(t)
		if !sampled(open(t, 1), context.Background()) {
			t.Error("a new trace was not recorded at ratio 1")
		}
	})
	t.Run("OTEL_TRACES_SAMPLER_wins", func(t *testing.T) {
		clearOtelEnv(t)
		t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
		if !sampled(open(t, 0), context.Background()) {
			t.Error("OTEL_TRACES_SAMPLER=always_on did not replace ratio 0")
		}
	})
}

// ginServer serves GET /work through tr's middleware; the handler answers
// the trace id and sampled flag the request's context carries.
func ginServer(tr *telemetry.Tracing) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.Use(tr.Gin())
	e.GET("/work", func(c *gin.Context) {
		sc := trace.SpanContextFromContext(c.Request.Context())
		c.String(http.StatusOK, "%s %v", sc.TraceID(), sc.IsSampled())
	})
	return e
}

func get(e *gin.Engine, traceparent string) string {
	r := httptest.NewRequest(http.MethodGet, "/work", nil)
	if traceparent != "" {
		r.Header.Set("traceparent", traceparent)
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, r)
	return w.Body.String()
}

// TestGinSamplesNewTracesOnceAtTheRatio: Gin's decision and the sampler's
// are one: at ratio 0.5 about half of 400 new traces are recorded (each
// request's context says whether it is), not a quarter (two decisions at
// 0.5 each), and every request has a trace id.
func TestGinSamplesNewTracesOnceAtTheRatio(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	sampling := telemetry.NewSampling(0.5, 0)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sampling.Sampler()))
	e := ginServer(telemetry.NewSampled(tp, "t", sampling))
	const n = 400
	said := 0
	for range n {
		id, sampled, _ := strings.Cut(get(e, ""), " ")
		if len(id) != 32 || id == strings.Repeat("0", 32) {
			t.Fatalf("a request without a trace id: %q", id)
		}
		if sampled == "true" {
			said++
		}
	}
	recorded := len(spans.GetSpans())
	if recorded != said || recorded < 150 || recorded > 250 {
		t.Fatalf("%d of %d requests recorded (%d said sampled), want about half", recorded, n, said)
	}
}

// TestGinRecordsAtMostTheLimitOfNewTraces: at ratio 1 with a limit of 5 a
// second, a burst of 60 requests records 5 new traces (6 if the clock moves
// on by a fifth of a second meanwhile) and every request still has a trace
// id; once the limit is spent a caller's sampled traceparent is continued
// all the same, and a span started outside a request (no parent) is held to
// the same limit.
func TestGinRecordsAtMostTheLimitOfNewTraces(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	sampling := telemetry.NewSampling(1, 5)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sampling.Sampler()))
	tr := telemetry.NewSampled(tp, "t", sampling)
	e := ginServer(tr)
	said := 0
	for range 60 {
		id, sampled, _ := strings.Cut(get(e, ""), " ")
		if len(id) != 32 || id == strings.Repeat("0", 32) {
			t.Fatalf("a request without a trace id: %q", id)
		}
		if sampled == "true" {
			said++
		}
	}
	if recorded := len(spans.GetSpans()); recorded != said || recorded < 5 || recorded > 6 {
		t.Fatalf("%d of 60 new traces recorded (%d said sampled), want 5 (or 6)", recorded, said)
	}
	const caller = "4bf92f3577b34da6a3ce929d0e0e4736"
	if got := get(e, "00-"+caller+"-00f067aa0ba902b7-01"); got != caller+" true" {
		t.Fatalf("a caller's sampled trace past the limit: the handler saw %q", got)
	}
	spans.Reset()
	for range 20 {
		_, span := tr.Tracer().Start(context.Background(), "background")
		span.End()
	}
	if n := len(spans.GetSpans()); n > 2 {
		t.Fatalf("%d of 20 new background traces recorded past the limit, want at most 2", n)
	}
}

// TestSamplingLimitRefills: a limit spent lets a new trace through again
// once its interval has passed (20 a second: one every 50 ms).
func TestSamplingLimitRefills(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	sampling := telemetry.NewSampling(1, 20)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sampling.Sampler()))
	e := ginServer(telemetry.NewSampled(tp, "t", sampling))
	for range 100 {
		get(e, "")
	}
	spent := len(spans.GetSpans())
	if spent < 20 || spent > 30 {
		t.Fatalf("%d of 100 recorded at 20 a second, want about 20", spent)
	}
	time.Sleep(150 * time.Millisecond)
	if _, sampled, _ := strings.Cut(get(e, ""), " "); sampled != "true" {
		t.Fatal("no new trace recorded 150 ms after the limit was spent")
	}
}

// TestEnvSamplerDecidesEveryRequest: with OTEL_TRACES_SAMPLER set the SDK's
// sampler decides, not the platform's: always_on records the request of a
// caller whose traceparent says not sampled (the platform's sampler would
// follow the caller), so the server span reaches the receiver.
func TestEnvSamplerDecidesEveryRequest(t *testing.T) {
	clearOtelEnv(t)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	recv := otlptest.Start(t)
	tr, err := telemetry.Open(context.Background(), config.Otel{Endpoint: recv.URL, SampleRatio: 0}, "1")
	if err != nil || !tr.Enabled() {
		t.Fatalf("Open: %v %v", tr, err)
	}
	const caller = "4bf92f3577b34da6a3ce929d0e0e4736"
	if got := get(ginServer(tr), "00-"+caller+"-00f067aa0ba902b7-00"); got != caller+" true" {
		t.Fatalf("the handler saw %q, want the caller's trace sampled", got)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, ok := recv.WaitFor("GET /work", 5*time.Second)
	if !ok || hex.EncodeToString(got.GetTraceId()) != caller {
		t.Fatalf("no server span in the caller's trace reached the receiver (%v); rejected %v", ok, recv.Rejected())
	}
}

// TestInstrumentDB_ExecPreparedStatementIsAQuerySpan: a statement run with
// db.ExecPrepared (SQLite's prepared hot writes) in a sampled request is a
// query span, a child of the request's span, named by its verb and showing
// its text with the placeholders, never the values; a raw bun query is named
// by its verb too (bun calls every raw query SELECT); the same statements in
// an unsampled context start no span.
func TestInstrumentDB_ExecPreparedStatementIsAQuerySpan(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	sampling := telemetry.NewSampling(1, 0)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sampling.Sampler()))
	tr := telemetry.NewSampled(tp, "t", sampling)
	bdb := tr.InstrumentDB(testkit.DB(t, testkit.SQLite))
	ctx := context.Background()
	if _, err := bdb.NewRaw("CREATE TABLE points (id TEXT PRIMARY KEY, kind TEXT)").Exec(telemetry.Untraced(ctx)); err != nil {
		t.Fatal(err)
	}
	const insert = "INSERT INTO points (id, kind) VALUES (?, ?)"
	write := func(ctx context.Context, id string) {
		t.Helper()
		err := db.NewConn(bdb).InTx(ctx, func(ctx context.Context, tx db.Conn) error {
			if _, err := tx.ExecPrepared(ctx, insert, id, "secret-kind"); err != nil {
				return err
			}
			_, err := tx.NewRaw("DELETE FROM points WHERE id = ?", "nobody").Exec(ctx)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	write(telemetry.Untraced(ctx), "a")
	if got := spans.GetSpans(); len(got) != 0 {
		t.Fatalf("unsampled statements recorded %d spans", len(got))
	}

	rctx, request := tr.Tracer().Start(ctx, "request")
	write(rctx, "b")
	request.End()
	var ins, del, begin, commit sdktrace.ReadOnlySpan
	for _, s := range spans.GetSpans().Snapshots() {
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.String(), "secret-kind") {
				t.Errorf("span %s shows a value: %s=%s", s.Name(), kv.Key, kv.Value.String())
			}
		}
		switch s.Name() {
		case "INSERT":
			ins = s
		case "DELETE":
			del = s
		case "BEGIN":
			begin = s
		case "COMMIT":
			commit = s
		}
	}
	if ins == nil || del == nil || begin == nil || commit == nil {
		var names []string
		for _, s := range spans.GetSpans() {
			names = append(names, s.Name)
		}
		t.Fatalf("INSERT, DELETE, BEGIN, COMMIT spans %v %v %v %v; recorded %v", ins != nil, del != nil, begin != nil, commit != nil, names)
	}
	// Every statement of the transaction, its COMMIT too, is a child of
	// the request, not of BEGIN.
	for _, s := range []sdktrace.ReadOnlySpan{ins, del, begin, commit} {
		if s.Parent().SpanID() != request.SpanContext().SpanID() || s.SpanKind() != trace.SpanKindClient {
			t.Errorf("%s span: parent %s kind %v, want a client span under the request %s", s.Name(), s.Parent().SpanID(), s.SpanKind(), request.SpanContext().SpanID())
		}
	}
	if got := attr(ins, "db.statement"); got != insert {
		t.Errorf("INSERT db.statement %q, want %q", got, insert)
	}
	if op, rows := attr(ins, "db.operation"), attr(ins, "db.rows_affected"); op != "INSERT" || rows != "1" {
		t.Errorf("INSERT db.operation %q rows %q, want INSERT 1", op, rows)
	}
	if got := attr(del, "db.operation"); got != "DELETE" {
		t.Errorf("raw DELETE db.operation %q", got)
	}
	// The caller is the code that asked for the query (the function given
	// to InTx here), not bun, the platform's db layer or the hook.
	for _, s := range []sdktrace.ReadOnlySpan{ins, del} {
		fn, file := attr(s, "code.function"), attr(s, "code.filepath")
		if !strings.HasPrefix(fn, "telemetry_test.TestInstrumentDB_ExecPreparedStatementIsAQuerySpan.func") ||
			!strings.HasSuffix(file, "/telemetry_test.go") || attr(s, "code.lineno") == "0" {
			t.Errorf("%s span: caller %s %s:%s, want this test's function", s.Name(), fn, file, attr(s, "code.lineno"))
		}
	}
	var n int
	if err := bdb.NewRaw("SELECT count(*) FROM points").Scan(telemetry.Untraced(ctx), &n); err != nil || n != 2 {
		t.Fatalf("%d rows (%v), want both inserts", n, err)
	}
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}
