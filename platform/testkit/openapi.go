package testkit

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/app"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Spec validates responses against the merged OpenAPI document of a server.
type Spec struct {
	Doc    *openapi3.T
	router routers.Router
}

// LoadSpec loads the document the server serves at /openapi.json.
func LoadSpec(t testing.TB, srv *app.Server) *Spec {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "/openapi.json", nil)
	rec := &bufferWriter{header: http.Header{}}
	srv.Engine.ServeHTTP(rec, req)
	doc, err := openapi3.NewLoader().LoadFromData(rec.body.Bytes())
	if err != nil {
		t.Fatalf("load merged openapi: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("merged openapi is not valid: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: "/"}}
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("openapi router: %v", err)
	}
	return &Spec{Doc: doc, router: r}
}

// ValidateResponse fails the test when a response does not match the document:
// an undocumented route, status, header or a body that breaks its schema.
func (s *Spec) ValidateResponse(t testing.TB, req *http.Request, res *Response) {
	t.Helper()
	route, params, err := s.router.FindRoute(req)
	if err != nil {
		if res.Status == http.StatusNotFound || res.Status == http.StatusMethodNotAllowed {
			return // an unknown route answering 404 is right
		}
		t.Errorf("openapi: %s %s is not documented (status %d): %v", req.Method, req.URL.Path, res.Status, err)
		return
	}
	ct := res.Header.Get("Content-Type")
	isJSON := strings.Contains(ct, "json")
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: res.Status,
		Header: res.Header,
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			ExcludeResponseBody:   !isJSON,
			MultiError:            true,
		},
	}
	body := res.Body
	if res.Header.Get("Content-Encoding") == "gzip" {
		// What a client reads once its HTTP library has decoded the body.
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err == nil {
			body, err = io.ReadAll(zr)
		}
		if err != nil {
			t.Errorf("openapi: %s %s answered a gzip body that does not decode: %v", req.Method, req.URL.Path, err)
			return
		}
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("openapi: %s %s answered %d that does not match %s: %v\nbody: %s", req.Method, req.URL.Path, res.Status, route.Operation.OperationID, err, truncate(res.Body))
	}
}

func truncate(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}

type bufferWriter struct {
	header http.Header
	body   bytes.Buffer
	status int
}

func (b *bufferWriter) Header() http.Header         { return b.header }
func (b *bufferWriter) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferWriter) WriteHeader(s int)           { b.status = s }
