package apierr_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/apierr"
	"github.com/gin-gonic/gin"
)

func TestEveryCodeHasItsStatus(t *testing.T) {
	want := map[apierr.Code]int{
		apierr.CodeValidation: 400, apierr.CodeBadRequest: 400, apierr.CodeUnauthorized: 401, apierr.CodeForbidden: 403,
		apierr.CodeNotFound: 404, apierr.CodeConflict: 409, apierr.CodePayloadTooLarge: 413, apierr.CodeUnsupportedMedia: 415,
		apierr.CodeRateLimited: 429, apierr.CodeInternal: 500, apierr.CodeUnavailable: 503,
	}
	for code, status := range want {
		if got := code.Status(); got != status {
			t.Errorf("%s: status %d, want %d", code, got, status)
		}
	}
}

func TestFieldsPaths(t *testing.T) {
	var f apierr.Fields
	f.Required("reference", " ")
	f.At("properties").At("health").OneOf("tbStatus", "x", "clear", "restricted")
	f.Index(2).Required("reference", "")
	f.At("files").Merge([]apierr.FieldError{{Path: "[1].id", Code: "not_found", Message: "no such file"}})
	f.MaxLen("question", strings.Repeat("é", 1001), 1000)
	got := []string{}
	for _, fe := range f.List() {
		got = append(got, fe.Path)
	}
	want := []string{"reference", "properties.health.tbStatus", "[2].reference", "files[1].id", "question"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("paths %v, want %v", got, want)
	}
	var ae *apierr.Error
	if !errors.As(f.Err(), &ae) || ae.Code != apierr.CodeValidation || len(ae.Validation) != 5 {
		t.Fatalf("Err() = %v", f.Err())
	}
	var empty apierr.Fields
	if empty.Err() != nil {
		t.Fatal("empty collector returned an error")
	}
}

func render(t *testing.T, debug bool, h gin.HandlerFunc, body string) (*httptest.ResponseRecorder, apierr.Body) {
	t.Helper()
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.Use(apierr.Middleware(apierr.RenderOptions{Debug: debug}))
	e.POST("/", h)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)))
	var b apierr.Body
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatalf("body %q: %v", rec.Body.String(), err)
	}
	return rec, b
}

func TestMiddlewareRendersTypedErrors(t *testing.T) {
	rec, b := render(t, false, func(c *gin.Context) {
		c.Set(apierr.BodyKey, []byte(`[{"a":1}]`))
		var f apierr.Fields
		f.Index(0).Required("reference", "")
		apierr.Render(c, f.Err())
	}, "")
	if rec.Code != 400 || b.Code != apierr.CodeValidation || b.Status != "error" || len(b.Validation) != 1 || b.Validation[0].Path != "[0].reference" {
		t.Fatalf("got %d %+v", rec.Code, b)
	}
	if string(b.Body) != `{"items":[{"a":1}]}` {
		t.Fatalf("list body echo %s", b.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("content type %q", ct)
	}
}

func TestMiddlewareHidesInternalsOutsideDebug(t *testing.T) {
	rec, b := render(t, false, func(c *gin.Context) { apierr.Render(c, errors.New("pq: password=hunter2 leaked")) }, "")
	if rec.Code != 500 || b.Code != apierr.CodeInternal || strings.Contains(rec.Body.String(), "hunter2") || b.Stack != "" {
		t.Fatalf("internal error leaked: %s", rec.Body.String())
	}
	rec, b = render(t, false, func(*gin.Context) { panic("boom") }, "")
	if rec.Code != 500 || b.Stack != "" || strings.Contains(rec.Body.String(), "boom") {
		t.Fatalf("panic leaked: %s", rec.Body.String())
	}
	_, b = render(t, true, func(*gin.Context) { panic("boom") }, "")
	if !strings.Contains(b.Stack, "goroutine") {
		t.Fatalf("debug mode has no stack: %q", b.Stack)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	rec, b := render(t, false, func(c *gin.Context) {
		apierr.Render(c, &apierr.Error{Code: apierr.CodeRateLimited, Message: "slow down", RetryAfter: 7})
	}, "")
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "7" || b.Code != apierr.CodeRateLimited {
		t.Fatalf("got %d %v %+v", rec.Code, rec.Header(), b)
	}
}

// errDown stands for a dependency's "down" error; the real classifiers are
// tested in their packages on the real drivers' errors.
var errDown = errors.New("dial tcp 10.0.0.1:5432: connect: connection refused")

func TestMiddlewareAnswers503ForADependencyThatIsDown(t *testing.T) {
	classifiers := []apierr.Classifier{{Dependency: "the database", Is: func(err error) bool { return errors.Is(err, errDown) }}}
	run := func(err error) (*httptest.ResponseRecorder, apierr.Body) {
		t.Helper()
		gin.SetMode(gin.ReleaseMode)
		e := gin.New()
		e.Use(apierr.Middleware(apierr.RenderOptions{Unavailable: classifiers}))
		e.GET("/", func(c *gin.Context) { apierr.Render(c, err) })
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		var b apierr.Body
		if jerr := json.Unmarshal(rec.Body.Bytes(), &b); jerr != nil {
			t.Fatalf("body %q: %v", rec.Body.String(), jerr)
		}
		return rec, b
	}
	for name, err := range map[string]error{
		"a bare error":                  fmt.Errorf("select listings: %w", errDown),
		"an internal error around it":   apierr.Internal(fmt.Errorf("store: %w", errDown)),
		"a wrapped internal around one": fmt.Errorf("create: %w", apierr.Internal(errDown)),
	} {
		rec, b := run(err)
		if rec.Code != http.StatusServiceUnavailable || b.Code != apierr.CodeUnavailable || b.Message != "the database is unavailable" ||
			rec.Header().Get("Retry-After") != "5" || strings.Contains(rec.Body.String(), "10.0.0.1") {
			t.Errorf("%s: %d %v %s", name, rec.Code, rec.Header(), rec.Body)
		}
	}
	// Deliberate answers keep their code whatever their cause.
	if rec, b := run(apierr.Wrap(errDown, apierr.CodeConflict, "taken")); rec.Code != http.StatusConflict || b.Code != apierr.CodeConflict {
		t.Errorf("conflict became %d %s", rec.Code, b.Code)
	}
	// Anything else is still a 500.
	if rec, b := run(errors.New("bun: model has no primary key")); rec.Code != http.StatusInternalServerError || b.Code != apierr.CodeInternal || rec.Header().Get("Retry-After") != "" {
		t.Errorf("unclassified error: %d %s", rec.Code, b.Code)
	}
}

// stackedPanic is a panic raised again away from where it happened, as
// db.TxPanic is: it carries the stack of its origin.
type stackedPanic struct{}

func (stackedPanic) PanicStack() []byte { return []byte("goroutine 7 [running]:\nwhere.it.happened()") }

func TestMiddleware_500_APanicRaisedAgainShowsItsOrigin(t *testing.T) {
	rec, b := render(t, true, func(*gin.Context) { panic(stackedPanic{}) }, "")
	if rec.Code != 500 || !strings.Contains(b.Stack, "where.it.happened()") {
		t.Fatalf("got %d, stack %q: want the panic's own stack", rec.Code, b.Stack)
	}
	rec, b = render(t, false, func(*gin.Context) { panic(stackedPanic{}) }, "")
	if rec.Code != 500 || b.Stack != "" || strings.Contains(rec.Body.String(), "where.it.happened") {
		t.Fatalf("panic leaked: %s", rec.Body.String())
	}
}
