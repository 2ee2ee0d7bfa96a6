package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/telemetry"
	"github.com/agritrade/api/platform/testkit"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
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
	line := lastLogLine(s, `msg="listing created"`)
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
	line := lastLogLine(s, `msg="listing created"`)
	if !strings.Contains(line, "request_id=req-untraced-1") || strings.Contains(line, "trace_id=") {
		t.Fatalf("the service's line: %q, want the request id and no trace", line)
	}
}

// TestServiceLogLineOnlyForACommittedChange: a repeat of a listing create
// with the same Idempotency-Key runs the handler up to its transaction and
// rolls it back (the kept answer goes out): "listing created" is logged
// once, for the change that committed, with the first request's id.
func TestServiceLogLineOnlyForACommittedChange(t *testing.T) {
	s := testkit.NewServer(t, testkit.DB(t, testkit.SQLite), func(p *app.Platform) []module.Module { return buildModules(p) }, testkit.Options{NoValidate: true})
	kind, body := listingBody(t, 3, "keyed listing")
	for i, id := range []string{"req-keyed-1", "req-keyed-2"} {
		res := s.Do(testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/listings/" + kind, Token: s.Token(testkit.Farmer), JSON: body,
			Header: map[string]string{"X-Request-ID": id, "Idempotency-Key": "keyed-log-1"}})
		if res.Status != http.StatusOK || (i == 1) != (res.Header.Get("Idempotent-Replayed") == "true") {
			t.Fatalf("attempt %d: %d %v %s", i, res.Status, res.Header, res.Body)
		}
	}
	if n := strings.Count(s.Logs.String(), `msg="listing created"`); n != 1 {
		t.Fatalf("%d \"listing created\" lines for one change, want 1:\n%s", n, s.Logs.String())
	}
	if line := lastLogLine(s, `msg="listing created"`); !strings.Contains(line, "request_id=req-keyed-1") {
		t.Fatalf("the line names another request: %s", line)
	}
}

// TestRedisAndProviderCallsAreChildSpans: with tracing on, a settings read
// over the Redis cache records the Redis commands, and a search answered by
// an outside geocoder (a stand-in serving Nominatim's recorded answer)
// records the outgoing HTTP call, each as a child in the request's trace,
// and the geocoder receives the trace in traceparent.
func TestRedisAndProviderCallsAreChildSpans(t *testing.T) {
	recorded, err := os.ReadFile(filepath.Join("..", "..", "system", "internal", "locations", "testdata", "nominatim_search.json"))
	if err != nil {
		t.Fatal(err)
	}
	var gotParent atomic.Value
	geocoder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotParent.Store(r.Header.Get("traceparent"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(recorded)
	}))
	t.Cleanup(geocoder.Close)
	redisURL := testkit.RedisURL(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := testkit.NewServer(t, testkit.DB(t, testkit.SQLite), func(p *app.Platform) []module.Module { return buildModules(p) },
		testkit.Options{NoValidate: true, Tracing: telemetry.New(tp, "agritrade-test"), Configure: func(c *config.Config) {
			c.Redis.URL = redisURL
			c.Cache.Backend = "redis"
			c.Set("locations.provider", "nominatim")
			c.Set("locations.nominatim_url", geocoder.URL)
			c.Set("locations.user_agent", "agritrade-test")
		}})
	tok := s.Token(testkit.Farmer)
	traced := func(path, trace string) sdktrace.ReadOnlySpan {
		t.Helper()
		res := s.Do(testkit.Request{Method: http.MethodGet, Path: path, Token: tok,
			Header: map[string]string{"traceparent": "00-" + trace + "-b7ad6b7169203331-01"}})
		if res.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, res.Status, res.Body)
		}
		for _, sp := range spans.GetSpans().Snapshots() {
			if sp.SpanKind() == oteltrace.SpanKindServer && sp.SpanContext().TraceID().String() == trace {
				return sp
			}
		}
		t.Fatalf("no server span for GET %s", path)
		return nil
	}
	children := func(server sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, sp := range spans.GetSpans().Snapshots() {
			if sp.SpanContext().TraceID() == server.SpanContext().TraceID() && sp.SpanKind() == oteltrace.SpanKindClient {
				out = append(out, sp)
			}
		}
		return out
	}
	attr := func(sp sdktrace.ReadOnlySpan, key string) string {
		for _, kv := range sp.Attributes() {
			if string(kv.Key) == key {
				return kv.Value.String()
			}
		}
		return ""
	}

	settings := traced("/system/v1/settings", "11111111111111111111111111111111")
	var redisCmds []string
	for _, sp := range children(settings) {
		if attr(sp, "db.system") == "redis" || attr(sp, "db.system.name") == "redis" {
			redisCmds = append(redisCmds, sp.Name())
		}
	}
	if len(redisCmds) == 0 {
		t.Fatalf("no Redis span in the settings read's trace; client spans: %v", spanNamesOf(children(settings)))
	}

	t.Logf("Redis commands in the settings read's trace: %v", redisCmds)
	search := traced("/system/v1/locations/search?query=Cambridge", "22222222222222222222222222222222")
	var call sdktrace.ReadOnlySpan
	for _, sp := range children(search) {
		if attr(sp, "db.system") == "" && attr(sp, "db.system.name") == "" {
			call = sp
		}
	}
	if call == nil {
		t.Fatalf("no outgoing HTTP span in the search's trace; client spans: %v", spanNamesOf(children(search)))
	}
	want := "00-22222222222222222222222222222222-" + call.SpanContext().SpanID().String() + "-01"
	if got, _ := gotParent.Load().(string); got != want {
		t.Fatalf("the geocoder got traceparent %q, want %q", got, want)
	}
	t.Logf("outgoing call span %q, traceparent %s", call.Name(), want)
}

func spanNamesOf(spans []sdktrace.ReadOnlySpan) []string {
	out := make([]string, 0, len(spans))
	for _, sp := range spans {
		out = append(out, sp.Name())
	}
	return out
}

// lastLogLine answers the server's last log line containing part, or "".
func lastLogLine(s *testkit.Server, part string) string {
	var line string
	for _, l := range strings.Split(s.Logs.String(), "\n") {
		if strings.Contains(l, part) {
			line = l
		}
	}
	return line
}

// TestDebugLevelShowsWhatComponentsDo: an operator who sets System to debug
// sees what the file store (a platform component, which follows System's
// settings) and reference data do, and System's filter selects among them.
// At info neither writes a line.
func TestDebugLevelShowsWhatComponentsDo(t *testing.T) {
	s := testkit.NewServer(t, testkit.DB(t, testkit.SQLite), func(p *app.Platform) []module.Module { return buildModules(p) })
	admin := s.Token(testkit.Admin)
	set := func(t *testing.T, body string) {
		t.Helper()
		res := s.Do(testkit.Request{Method: http.MethodPut, Path: "/system/v1/admin/settings", Token: admin, JSON: body})
		if res.Status != http.StatusOK {
			t.Fatalf("settings %s: %d %s", body, res.Status, res.Body)
		}
	}
	uploadOne := func(t *testing.T, seed int) string {
		t.Helper()
		body, ct, _ := upload(t, testkit.Farmer, seed)
		res := s.Do(testkit.Request{Method: http.MethodPost, Path: "/system/v1/files", Token: s.Token(testkit.Farmer), Body: bytes.NewReader(body), ContentType: ct})
		if res.Status != http.StatusOK {
			t.Fatalf("upload: %d %s", res.Status, res.Body)
		}
		return res.Map(t)["id"].(string)
	}
	countryOnce := func(t *testing.T, iso string) {
		t.Helper()
		if res := s.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/settings/" + iso, Token: s.Token(testkit.Farmer)}); res.Status != http.StatusOK {
			t.Fatalf("settings of %s: %d %s", iso, res.Status, res.Body)
		}
	}

	t.Run("info_writes_no_debug_line", func(t *testing.T) {
		set(t, `{"logging":{"level":"info","filter":""}}`)
		id := uploadOne(t, 1)
		countryOnce(t, "GB")
		if line := lastLogLine(s, "file="+id); line != "" {
			t.Fatalf("at info the file store wrote: %s", line)
		}
		if line := lastLogLine(s, "key=\"refdata:settings:GB\""); strings.Contains(line, "level=debug") {
			t.Fatalf("at info reference data wrote: %s", line)
		}
	})
	t.Run("debug_filtered_to_files_shows_the_file_store_only", func(t *testing.T) {
		set(t, `{"logging":{"level":"debug","filter":"files"}}`)
		id := uploadOne(t, 2)
		countryOnce(t, "IE")
		// The store's line of this upload (the thumbnails made at upload read it after).
		line := lastLogLine(s, `msg="file stored"`)
		for _, want := range []string{"level=debug", "file=" + id, "module=platform", "component=files", "bucket=images", "bytes="} {
			if !strings.Contains(line, want) {
				t.Fatalf("the file store's debug line lacks %s: %q\n%s", want, line, s.Logs.String())
			}
		}
		if line := lastLogLine(s, "refdata:settings:IE"); line != "" {
			t.Fatalf("the filter files let reference data through: %s", line)
		}
	})
	t.Run("debug_unfiltered_shows_reference_data", func(t *testing.T) {
		set(t, `{"logging":{"filter":""}}`)
		// FR is known but not enabled: the 404 is built and cached too.
		if res := s.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/settings/FR", Token: s.Token(testkit.Farmer)}); res.Status != http.StatusNotFound {
			t.Fatalf("settings of FR: %d %s", res.Status, res.Body)
		}
		line := lastLogLine(s, "refdata:settings:FR")
		if !strings.Contains(line, "level=debug") || !strings.Contains(line, "component=refdata") || !strings.Contains(line, "cache miss") {
			t.Fatalf("no reference data debug line: %q\n%s", line, s.Logs.String())
		}
	})
}
