package httpx_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
)

// semantics serves a small engine over a real net/http server: HEAD bodies are
// discarded by net/http itself, which a ResponseRecorder would not show.
func semantics(t *testing.T) (*httptest.Server, *int) {
	t.Helper()
	e := httpx.NewEngine(httpx.Options{MaxBodyBytes: 1 << 10, Version: "platform/1.0.0"})
	var bodies int
	e.GET("/things/:id", func(c *gin.Context) {
		if !httpx.IsHead(c) {
			bodies++
		}
		c.Header("ETag", `"v1"`)
		c.JSON(http.StatusOK, gin.H{"id": c.Param("id")})
	})
	e.POST("/things", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "success"}) })
	e.HEAD("/own-head", func(c *gin.Context) { c.Header("X-Own", "yes"); c.Status(http.StatusNoContent) })
	e.GET("/own-head", func(c *gin.Context) { c.String(http.StatusOK, "get") })
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv, &bodies
}

// answer is what a call got back (the body read and closed).
type answer struct {
	StatusCode int
	Header     http.Header
}

func call(t *testing.T, method, url string) (answer, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{StatusCode: res.StatusCode, Header: res.Header}, body
}

func errorCode(t *testing.T, res answer, body []byte) string {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error answered %s, want JSON: %s", ct, body)
	}
	var e struct {
		Status, Code, Message string
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Status != "error" || e.Message == "" {
		t.Fatalf("not the error body: %s", body)
	}
	return e.Code
}

func TestEngine_405_AllowListsTheMethods(t *testing.T) {
	srv, _ := semantics(t)
	for _, tc := range []struct{ method, path, allow string }{
		{http.MethodDelete, "/things/1", "GET, HEAD"},
		{http.MethodPut, "/things", "POST"},
		{http.MethodPost, "/own-head", "GET, HEAD"},
	} {
		res, body := call(t, tc.method, srv.URL+tc.path)
		if res.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("%s %s: %d, want 405", tc.method, tc.path, res.StatusCode)
		}
		if got := errorCode(t, res, body); got != "method_not_allowed" {
			t.Fatalf("%s %s: code %q", tc.method, tc.path, got)
		}
		if got := res.Header.Get("Allow"); got != tc.allow {
			t.Fatalf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
}

func TestEngine_200_HEADAnswersTheGETsHeadersWithoutBody(t *testing.T) {
	srv, bodies := semantics(t)
	res, body := call(t, http.MethodHead, srv.URL+"/things/7")
	if res.StatusCode != http.StatusOK || len(body) != 0 {
		t.Fatalf("HEAD: %d with %d body bytes", res.StatusCode, len(body))
	}
	if res.Header.Get("ETag") != `"v1"` || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") || res.Header.Get(httpx.HeaderRequestID) == "" {
		t.Fatalf("HEAD lacks the GET's headers: %v", res.Header)
	}
	// gin's method-not-allowed lookup sets Allow before the HEAD becomes a
	// GET; a 200 must not carry the 405's header.
	if allow := res.Header.Get("Allow"); allow != "" {
		t.Fatalf("HEAD answered 200 with the 405's Allow %q", allow)
	}
	if *bodies != 0 {
		t.Fatalf("the handler did not see IsHead")
	}
	// A route with its own HEAD keeps it.
	res, _ = call(t, http.MethodHead, srv.URL+"/own-head")
	if res.StatusCode != http.StatusNoContent || res.Header.Get("X-Own") != "yes" {
		t.Fatalf("own HEAD: %d %v", res.StatusCode, res.Header)
	}
	// HEAD of an unknown path is still a 404; of a POST-only path a 405.
	if res, _ := call(t, http.MethodHead, srv.URL+"/nothing"); res.StatusCode != http.StatusNotFound {
		t.Fatalf("HEAD unknown: %d", res.StatusCode)
	}
	if res, _ := call(t, http.MethodHead, srv.URL+"/things"); res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "POST" {
		t.Fatalf("HEAD on POST-only: %d Allow %q", res.StatusCode, res.Header.Get("Allow"))
	}
}

func TestEngine_404_TrailingSlashIsJSONNotARedirect(t *testing.T) {
	srv, _ := semantics(t)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Get(srv.URL + "/things/7/")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("trailing slash: %d %s", res.StatusCode, body)
	}
	if got := errorCode(t, answer{StatusCode: res.StatusCode, Header: res.Header}, body); got != "not_found" || !strings.Contains(string(body), "/things/7)") {
		t.Fatalf("trailing slash: %s", body)
	}
}
