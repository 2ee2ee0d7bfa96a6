package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/telemetry"
	"github.com/agritrade/api/platform/testkit"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestServiceLogLinesCarryTraceAndRequestIDs: what a feature logs while it
// serves a request (here "listing created" and the settings cache) names the
// request's trace and request id, so an on-call engineer goes from a log line
// to its trace.
func TestServiceLogLinesCarryTraceAndRequestIDs(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := testkit.NewServer(t, testkit.DB(t, testkit.SQLite), func(p *app.Platform) []module.Module { return buildModules(p) },
		testkit.Options{NoValidate: true, Tracing: telemetry.New(tp, "agritrade-test")})
	const trace = "0af7651916cd43dd8448eb211c80319c"
	kind, body := listingBody(t, 1, "traced listing")
	res := s.Do(testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/listings/" + kind, Token: s.Token(testkit.Farmer), JSON: body,
		Header: map[string]string{"traceparent": "00-" + trace + "-b7ad6b7169203331-01", "X-Request-ID": "req-traced-1"}})
	if res.Status != http.StatusOK {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	var line string
	for _, l := range strings.Split(s.Logs.String(), "\n") {
		if strings.Contains(l, `msg="listing created"`) {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no \"listing created\" line in the log:\n%s", s.Logs.String())
	}
	if !strings.Contains(line, "trace_id="+trace) || !strings.Contains(line, "span_id=") || !strings.Contains(line, "request_id=req-traced-1") {
		t.Fatalf("the service's line lacks the trace or request id: %s", line)
	}
}

// TestServiceLogLinesCarryRequestIDWithoutTracing: with tracing off the same
// line still names the request (and no trace).
func TestServiceLogLinesCarryRequestIDWithoutTracing(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	s := testkit.NewServer(t, testkit.DB(t, testkit.SQLite), func(p *app.Platform) []module.Module { return buildModules(p) }, testkit.Options{NoValidate: true})
	kind, body := listingBody(t, 2, "untraced listing")
	res := s.Do(testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/listings/" + kind, Token: s.Token(testkit.Farmer), JSON: body,
		Header: map[string]string{"X-Request-ID": "req-untraced-1"}})
	if res.Status != http.StatusOK {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	var line string
	for _, l := range strings.Split(s.Logs.String(), "\n") {
		if strings.Contains(l, `msg="listing created"`) {
			line = l
		}
	}
	if !strings.Contains(line, "request_id=req-untraced-1") || strings.Contains(line, "trace_id=") {
		t.Fatalf("the service's line: %q, want the request id and no trace", line)
	}
}
