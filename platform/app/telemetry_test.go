package app_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/outbox"
	"github.com/agritrade/api/platform/ratelimit"
	"github.com/agritrade/api/platform/tabular"
	"github.com/agritrade/api/platform/telemetry"
	"github.com/agritrade/api/platform/testkit"
	"github.com/gin-gonic/gin"
	"github.com/uptrace/bun"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// probeModule is a module whose routes do, through the real platform parts,
// what features do: enqueue a notification in a transaction, read through the
// cache, pass a rate limit, import a CSV file.
type probeModule struct {
	module.Base
	p *app.Platform
}

const probeDoc = "openapi: 3.0.3\ninfo: {title: probe, version: 1.0.0}\npaths: {}\n"

func newProbe(p *app.Platform) []module.Module {
	return []module.Module{probeModule{Base: module.Base{ModuleName: "probe", ModuleVersion: "1.4.2", Document: []byte(probeDoc)}, p: p}}
}

func (m probeModule) Mount(r module.Routes) {
	r.API.POST("/events", httpx.H(func(c *gin.Context) error {
		typ := c.DefaultQuery("type", "probe.created")
		err := db.InTx(c.Request.Context(), m.p.DB, func(ctx context.Context, tx bun.Tx) error {
			return outbox.Enqueue(ctx, tx, outbox.Event{Type: typ, Subject: "a probe", Data: map[string]string{"k": "v"}})
		})
		if err != nil {
			return err
		}
		c.Status(http.StatusAccepted)
		return nil
	}))
	r.API.GET("/cached/:key", httpx.H(func(c *gin.Context) error {
		_, hit, err := m.p.Cache.Get(c.Request.Context(), "probe:"+c.Param("key"))
		if err != nil {
			return err
		}
		if !hit {
			if err := m.p.Cache.Set(c.Request.Context(), "probe:"+c.Param("key"), []byte("v"), time.Minute); err != nil {
				return err
			}
		}
		c.JSON(http.StatusOK, gin.H{"hit": hit})
		return nil
	}))
	r.API.GET("/limited", ratelimit.Middleware(m.p.RateLimit, "probe"), func(c *gin.Context) { c.Status(http.StatusNoContent) })
	r.API.POST("/import", httpx.H(func(c *gin.Context) error {
		rows, _, err := tabular.FromRequest(c.Request, "file", tabular.Options{MaxBytes: 1 << 20})
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		done := tabular.Track("probe")
		if len(rows.Header()) < 2 {
			err := apierr.BadRequest("the file needs the columns name and qty")
			done(nil, err)
			return err
		}
		res := tabular.NewResult()
		for {
			row, line, err := rows.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				done(nil, err)
				return err
			}
			st := tabular.StatusSuccess
			if tabular.Cell(row, 0) == "" {
				st = tabular.StatusValidation
			}
			res.Add(tabular.RowResult{Rows: tabular.Line(line), Status: st})
		}
		done(res, nil)
		c.JSON(http.StatusOK, res)
		return nil
	}))
}

// webhookReceiver answers 204 and keeps the traceparent of each call.
type webhookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	parent []string
}

func newWebhookReceiver(t *testing.T) *webhookReceiver {
	w := &webhookReceiver{}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.mu.Lock()
		w.parent = append(w.parent, r.Header.Get("traceparent"))
		w.mu.Unlock()
		if r.Header.Get(outbox.HeaderEventType) == "probe.doomed" {
			rw.WriteHeader(http.StatusInternalServerError) // the receiver refuses these for good
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(w.Close)
	return w
}

func (w *webhookReceiver) wait(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		w.mu.Lock()
		got := append([]string(nil), w.parent...)
		w.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook received %d calls, want %d", len(got), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func webhookConfig(url string) func(c *config.Config) {
	return func(c *config.Config) {
		c.Notify.Webhook = config.Webhook{URL: url, Secret: "probe-secret", Timeout: 5 * time.Second}
		c.Notify.PollInterval = 50 * time.Millisecond
	}
}

// TestTraceFollowsRequestIntoOutboxDelivery sends a request carrying a W3C
// traceparent to a route that enqueues a notification, on both dialects, with
// a provider that samples on its own (as with OTEL_TRACES_SAMPLER: every
// request runs otelgin), and checks the recorded chain (see checkTraceChain).
func TestTraceFollowsRequestIntoOutboxDelivery(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		spans := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		recv := newWebhookReceiver(t)
		srv := testkit.NewServer(t, bdb, newProbe, testkit.Options{NoValidate: true, Tracing: telemetry.New(tp, "agritrade-test"), Configure: webhookConfig(recv.URL)})
		if !hasOtelgin(srv.App.Engine) {
			t.Fatal("tracing on, but the engine has no tracing middleware")
		}
		checkTraceChain(t, srv, spans, recv, callerTrace)
	})
}

// TestSampledRequestRecordsTheWholeChain: with the platform's sampler a
// request it samples records the same chain, whether the ratio sampled it
// (ratio 1, no traceparent) or the caller did (ratio 0, a sampled
// traceparent: continued whatever the ratio).
func TestSampledRequestRecordsTheWholeChain(t *testing.T) {
	for name, c := range map[string]struct {
		ratio  float64
		caller string
	}{"ratio_1_new_trace": {1, ""}, "ratio_0_sampled_caller": {0, callerTrace}} {
		t.Run(name, func(t *testing.T) {
			spans := tracetest.NewInMemoryExporter()
			sampling := telemetry.NewSampling(c.ratio, 0)
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sampling.Sampler()))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			recv := newWebhookReceiver(t)
			srv := testkit.NewServer(t, testkit.DB(t, testkit.SQLite), newProbe, testkit.Options{NoValidate: true,
				Tracing: telemetry.NewSampled(tp, "agritrade-test", sampling), Configure: webhookConfig(recv.URL)})
			checkTraceChain(t, srv, spans, recv, c.caller)
		})
	}
}

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
)

// checkTraceChain posts to a route that enqueues a notification (with the
// caller's sampled traceparent when caller is set) and checks the recorded
// spans: the server span (continuing the caller's trace), the INSERT into the
// outbox is its child, the delivery (run later by the dispatcher) is also its
// child through the trace context stored with the event, the webhook call is
// a child of the delivery and carries traceparent to the receiver, and the
// log lines of the request and of the delivery name the trace.
func checkTraceChain(t *testing.T, srv *testkit.Server, spans *tracetest.InMemoryExporter, recv *webhookReceiver, caller string) {
	t.Helper()
	req := testkit.Request{Method: http.MethodPost, Path: "/probe/v1/events"}
	if caller != "" {
		req.Header = map[string]string{"traceparent": "00-" + caller + "-" + callerSpan + "-01"}
	}
	res := srv.Do(req)
	if res.Status != http.StatusAccepted {
		t.Fatalf("POST /probe/v1/events: %d %s", res.Status, res.Body)
	}
	parents := recv.wait(t, 1)

	var server, insert, deliver, client sdktrace.ReadOnlySpan
	deadline := time.Now().Add(10 * time.Second)
	for client == nil || deliver == nil {
		if time.Now().After(deadline) {
			t.Fatalf("spans missing: server %v insert %v deliver %v client %v; recorded %v", server != nil, insert != nil, deliver != nil, client != nil, spanNames(spans))
		}
		for _, s := range spans.GetSpans().Snapshots() {
			switch {
			case s.SpanKind() == trace.SpanKindServer && s.Name() == "POST /probe/v1/events":
				server = s
			case s.Name() == "INSERT" && strings.Contains(attr(s, "db.statement"), "platform_outbox"):
				insert = s
			case s.Name() == "outbox deliver":
				deliver = s
			case s.SpanKind() == trace.SpanKindClient && strings.HasPrefix(s.Name(), "HTTP POST") || s.Name() == "POST" && s.SpanKind() == trace.SpanKindClient:
				client = s
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if server == nil || insert == nil {
		t.Fatalf("server span %v, insert span %v; recorded %v", server != nil, insert != nil, spanNames(spans))
	}
	traceID := server.SpanContext().TraceID().String()
	if caller != "" {
		if traceID != caller {
			t.Errorf("server span trace %s, want the caller's %s", traceID, caller)
		}
		if got := server.Parent().SpanID().String(); got != callerSpan || !server.Parent().IsRemote() {
			t.Errorf("server span parent %s (remote %v), want the caller's span %s", got, server.Parent().IsRemote(), callerSpan)
		}
	} else if server.Parent().IsValid() {
		t.Errorf("server span of a new trace has a parent %s", server.Parent().SpanID())
	}
	for name, s := range map[string]sdktrace.ReadOnlySpan{"insert": insert, "deliver": deliver} {
		if s.SpanContext().TraceID() != server.SpanContext().TraceID() || s.Parent().SpanID() != server.SpanContext().SpanID() {
			t.Errorf("%s span: trace %s parent %s, want a child of the server span %s", name, s.SpanContext().TraceID(), s.Parent().SpanID(), server.SpanContext().SpanID())
		}
	}
	if deliver.SpanKind() != trace.SpanKindConsumer || attr(deliver, "agritrade.event.type") != "probe.created" {
		t.Errorf("delivery span kind %v type %q", deliver.SpanKind(), attr(deliver, "agritrade.event.type"))
	}
	if client.Parent().SpanID() != deliver.SpanContext().SpanID() || client.SpanContext().TraceID() != server.SpanContext().TraceID() {
		t.Errorf("webhook client span parent %s, want the delivery span %s", client.Parent().SpanID(), deliver.SpanContext().SpanID())
	}
	want := "00-" + traceID + "-" + client.SpanContext().SpanID().String() + "-01"
	if parents[0] != want {
		t.Errorf("webhook receiver got traceparent %q, want %q", parents[0], want)
	}

	logs := srv.Logs.String()
	requestLine := lineWith(logs, "route=/probe/v1/events")
	if !strings.Contains(requestLine, "trace_id="+traceID) || !strings.Contains(requestLine, "request_id=") {
		t.Errorf("the request's log line lacks its trace or request id: %s", requestLine)
	}
	if line := lineWith(logs, "msg=notification "); !strings.Contains(line, "trace_id="+traceID) || !strings.Contains(line, "span_id=") {
		t.Errorf("the delivery's log line lacks the trace id: %s", line)
	}
}

// TestUnsampledRequestRunsNoInstrumentation: with the platform's sampler a
// request it does not sample (ratio 0 and no traceparent, or a caller's
// traceparent with flags 00 even at ratio 1) starts no span at all, in
// otelgin, bunotel, the outbox or otelhttp (a provider that counts every
// Start sees none), yet its log line and its webhook delivery's log line name
// one trace (new, or the caller's), and the webhook receiver gets that trace
// as not sampled.
func TestUnsampledRequestRunsNoInstrumentation(t *testing.T) {
	for name, c := range map[string]struct {
		ratio  float64
		caller string
	}{"ratio_0_new_trace": {0, ""}, "ratio_1_unsampled_caller": {1, callerTrace}} {
		t.Run(name, func(t *testing.T) {
			spans := tracetest.NewInMemoryExporter()
			sampling := telemetry.NewSampling(c.ratio, 0)
			sdk := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sampling.Sampler()))
			t.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
			tp := &countingProvider{tp: sdk}
			recv := newWebhookReceiver(t)
			srv := testkit.NewServer(t, testkit.DB(t, testkit.SQLite), newProbe, testkit.Options{NoValidate: true,
				Tracing: telemetry.NewSampled(tp, "agritrade-test", sampling), Configure: webhookConfig(recv.URL)})
			req := testkit.Request{Method: http.MethodPost, Path: "/probe/v1/events", Header: map[string]string{"X-Request-ID": "req-unsampled"}}
			if c.caller != "" {
				req.Header["traceparent"] = "00-" + c.caller + "-" + callerSpan + "-00"
			}
			res := srv.Do(req)
			if res.Status != http.StatusAccepted {
				t.Fatalf("POST /probe/v1/events: %d %s", res.Status, res.Body)
			}
			parents := recv.wait(t, 1)
			waitForLine(t, srv, "msg=notification ")

			requestLine := lineWith(srv.Logs.String(), "route=/probe/v1/events")
			traceID := field(requestLine, "trace_id")
			if len(traceID) != 32 || traceID == strings.Repeat("0", 32) || !strings.Contains(requestLine, "request_id=req-unsampled") {
				t.Fatalf("the request's log line lacks a trace or its request id: %s", requestLine)
			}
			if got := tp.of(traceID); len(got) != 0 {
				t.Errorf("spans started for an unsampled request: %v", got)
			}
			for _, s := range spans.GetSpans().Snapshots() {
				if s.SpanContext().TraceID().String() == traceID || s.SpanKind() == trace.SpanKindServer {
					t.Errorf("span recorded for an unsampled request: %v", spanNames(spans))
					break
				}
			}
			if c.caller != "" && traceID != c.caller {
				t.Errorf("the request's log line names trace %s, want the caller's %s", traceID, c.caller)
			}
			if got := field(lineWith(srv.Logs.String(), "msg=notification "), "trace_id"); got != traceID {
				t.Errorf("the delivery's log line names trace %q, want the request's %s", got, traceID)
			}
			if !strings.HasPrefix(parents[0], "00-"+traceID+"-") || !strings.HasSuffix(parents[0], "-00") {
				t.Errorf("webhook receiver got traceparent %q, want trace %s not sampled", parents[0], traceID)
			}
		})
	}
}

// countingProvider records every span started through it: its
// instrumentation scope and the trace of its parent (zero for a new trace).
type countingProvider struct {
	embedded.TracerProvider
	tp     trace.TracerProvider
	mu     sync.Mutex
	starts []started
}

type started struct {
	scope  string
	parent trace.TraceID
}

func (p *countingProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return countingTracer{Tracer: p.tp.Tracer(name, opts...), p: p, scope: name}
}

// of answers the spans started in trace id or by otelgin (a request's server
// span starts a new trace): the background work of the platform (the purge
// of idempotency keys at start) starts traces of its own meanwhile.
func (p *countingProvider) of(id string) []started {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []started
	for _, s := range p.starts {
		if s.parent.String() == id || strings.Contains(s.scope, "otelgin") {
			out = append(out, s)
		}
	}
	return out
}

type countingTracer struct {
	trace.Tracer
	p     *countingProvider
	scope string
}

func (t countingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	t.p.mu.Lock()
	t.p.starts = append(t.p.starts, started{scope: t.scope, parent: trace.SpanContextFromContext(ctx).TraceID()})
	t.p.mu.Unlock()
	return t.Tracer.Start(ctx, name, opts...)
}

// field answers the value of key=value in a logfmt line, or "".
func field(line, key string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

func waitForLine(t *testing.T, srv *testkit.Server, part string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for lineWith(srv.Logs.String(), part) == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q:\n%s", part, srv.Logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTracingOffInstallsNothing: without an endpoint the platform has no
// tracing, the engine no tracing middleware, and nothing is stored with an
// outbox event even when the caller sends a traceparent.
func TestTracingOffInstallsNothing(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	srv := testkit.NewServer(t, testkit.DB(t, testkit.SQLite), newProbe, testkit.Options{NoValidate: true})
	if srv.Platform.Tracing.Enabled() {
		t.Fatal("tracing is on without an endpoint")
	}
	if hasOtelgin(srv.App.Engine) {
		t.Fatal("tracing middleware installed while tracing is off")
	}
	res := srv.Do(testkit.Request{Method: http.MethodPost, Path: "/probe/v1/events",
		Header: map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
	if res.Status != http.StatusAccepted {
		t.Fatalf("POST /probe/v1/events: %d %s", res.Status, res.Body)
	}
	recs, err := outbox.List(context.Background(), srv.Platform.DB, outbox.Filter{Type: "probe.created"})
	if err != nil || len(recs) != 1 {
		t.Fatalf("outbox: %v %d", err, len(recs))
	}
	if recs[0].TraceContext != "" {
		t.Fatalf("trace context stored while tracing is off: %q", recs[0].TraceContext)
	}
	if strings.Contains(srv.Logs.String(), "trace_id=") {
		t.Fatal("log lines carry a trace id while tracing is off")
	}
}

func hasOtelgin(e *gin.Engine) bool {
	for _, h := range e.Handlers {
		if strings.Contains(runtime.FuncForPC(reflect.ValueOf(h).Pointer()).Name(), "otelgin") {
			return true
		}
	}
	return false
}

func spanNames(e *tracetest.InMemoryExporter) []string {
	var out []string
	for _, s := range e.GetSpans().Snapshots() {
		out = append(out, s.SpanKind().String()+":"+s.Name()+"("+s.SpanContext().SpanID().String()+"<"+s.Parent().SpanID().String()+")"+attr(s, "db.statement"))
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

func lineWith(logs, needle string) string {
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, needle) {
			return l
		}
	}
	return ""
}

// multipartCSV builds a multipart body with one CSV file part.
func multipartCSV(t *testing.T, csv string) (*bytes.Buffer, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", "rows.csv")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write([]byte(csv))
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf, mw.FormDataContentType()
}

var adminPrincipal = auth.Principal{UserID: "ops", Name: "Ops", OrgID: "o1", Orgs: []string{"o1"}, Roles: []string{auth.RoleAdmin}}
