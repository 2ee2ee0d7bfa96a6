package httpx_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/logging"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// logged serves an engine whose platform and "system" module log as JSON into
// the returned buffer, at level.
func logged(t *testing.T, level string) (*httptest.Server, *bytes.Buffer, *httpx.Metrics) {
	t.Helper()
	var out bytes.Buffer
	reg, err := logging.NewRegistry(&out, "json", level)
	if err != nil {
		t.Fatal(err)
	}
	m := httpx.NewMetrics()
	e := httpx.NewEngine(httpx.Options{Log: reg.Module("platform"), Version: "platform/1.0.0", Metrics: m})
	g := e.Group("/system/v1", httpx.Scope(reg.Module("system"), "1.2.3"))
	g.GET("/things", func(c *gin.Context) {
		httpx.Logger(c).Info("feature line")
		c.JSON(http.StatusOK, gin.H{"ok": true})
	})
	g.GET("/broken", func(c *gin.Context) { c.Status(http.StatusServiceUnavailable) })
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv, &out, m
}

func lines(t *testing.T, out *bytes.Buffer) []map[string]any {
	t.Helper()
	var all []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON log line: %q", l)
		}
		all = append(all, m)
	}
	return all
}

func TestAccessLog_200_InfoLinesNameTheModuleRequestAndRoute(t *testing.T) {
	srv, out, _ := logged(t, "info")
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/system/v1/things", nil)
	req.Header.Set(httpx.HeaderRequestID, "req-42")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if got := res.Header.Get(httpx.HeaderAPIVersion); got != "system/1.2.3" {
		t.Fatalf("X-API-Version %q, want the module's", got)
	}
	if got := res.Header.Get(httpx.HeaderRequestID); got != "req-42" {
		t.Fatalf("X-Request-ID %q, want the caller's", got)
	}
	ls := lines(t, out)
	if len(ls) != 2 {
		t.Fatalf("want the feature's line and the access line, got %d: %s", len(ls), out)
	}
	for _, l := range ls {
		if l["module"] != "system" || l["request_id"] != "req-42" || l["component"] != "http" {
			t.Fatalf("line without the module, request id or component: %v", l)
		}
	}
	access := ls[1]
	if access["msg"] != "request" || access["route"] != "/system/v1/things" || access["status"] != float64(200) || access["method"] != "GET" {
		t.Fatalf("access line %v", access)
	}
}

func TestAccessLog_503_WarnLevelWritesOnlyServerErrors(t *testing.T) {
	srv, out, _ := logged(t, "warn")
	for _, p := range []string{"/system/v1/things", "/system/v1/broken"} {
		res, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
	}
	ls := lines(t, out)
	if len(ls) != 1 || ls[0]["status"] != float64(503) || ls[0]["level"] != "warning" || ls[0]["module"] != "system" {
		t.Fatalf("want only the 503's access line at warning, got: %s", out)
	}
}

func TestMetrics_405_UnknownMethodsShareOneLabel(t *testing.T) {
	srv, _, m := logged(t, "error")
	for _, method := range []string{"BREW", "WHEN", http.MethodGet} {
		req, _ := http.NewRequest(method, srv.URL+"/system/v1/things", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
	}
	want := `
# HELP agritrade_http_requests_total HTTP requests by module, method, route template and status.
# TYPE agritrade_http_requests_total counter
agritrade_http_requests_total{method="GET",module="system",route="/system/v1/things",status="200"} 1
agritrade_http_requests_total{method="OTHER",module="platform",route="unmatched",status="405"} 2
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "agritrade_http_requests_total"); err != nil {
		t.Fatal(err)
	}
}
