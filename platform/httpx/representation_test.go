package httpx_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
)

// TestRequestID_200_NewIsUUIDv7: a request without a usable X-Request-ID is
// answered under a fresh UUIDv7 of the current time, a new one each time.
func TestRequestID_200_NewIsUUIDv7(t *testing.T) {
	e := engine(func(c *gin.Context) error { c.Status(http.StatusNoContent); return nil })
	seen := map[string]bool{}
	for range 100 {
		id := do(e, http.MethodGet, "/x", "", "").Header().Get(httpx.HeaderRequestID)
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 || u.String() != id {
			t.Fatalf("request id %q (err %v): want a UUIDv7 in its canonical form", id, err)
		}
		sec, nsec := u.Time().UnixTime()
		if d := time.Since(time.Unix(sec, nsec)); d < -time.Second || d > time.Minute {
			t.Fatalf("request id %q is of %v, not now", id, time.Unix(sec, nsec))
		}
		if seen[id] {
			t.Fatalf("request id %q given twice", id)
		}
		seen[id] = true
	}
}

// TestWriteRepresentation_200_HeadersOfEitherForm: the plain and the gzip
// form carry their own ETag, Cache-Control, Content-Type, Content-Length and
// Vary, and an If-None-Match naming either form is answered 304.
func TestWriteRepresentation_200_HeadersOfEitherForm(t *testing.T) {
	body := []byte(strings.Repeat(`{"a":"settings"}`, 200))
	gz := httpx.Gzip(body)
	etag := httpx.StrongETag(body)
	e := engine(func(c *gin.Context) error {
		httpx.WriteRepresentation(c, "application/json; charset=utf-8", body, gz, etag, "private, max-age=300")
		return nil
	})
	for _, tc := range []struct {
		accept, etag string
		body         []byte
	}{{"", etag, body}, {"gzip", httpx.GzipETag(etag), gz}} {
		rec := do(e, http.MethodGet, "/x", "", "", "Accept-Encoding", tc.accept)
		h := rec.Header()
		if rec.Code != http.StatusOK || rec.Body.String() != string(tc.body) || h.Get("ETag") != tc.etag ||
			h.Get("Cache-Control") != "private, max-age=300" || h.Get("Content-Type") != "application/json; charset=utf-8" ||
			h.Get("Content-Length") != strconv.Itoa(len(tc.body)) || h.Get("Vary") != "Accept-Encoding" || len(h["Etag"]) != 1 {
			t.Fatalf("Accept-Encoding %q: %d %v", tc.accept, rec.Code, h)
		}
		if (h.Get("Content-Encoding") == "gzip") != (tc.accept == "gzip") {
			t.Fatalf("Accept-Encoding %q: Content-Encoding %q", tc.accept, h.Get("Content-Encoding"))
		}
		for _, inm := range []string{etag, httpx.GzipETag(etag)} {
			rec := do(e, http.MethodGet, "/x", "", "", "Accept-Encoding", tc.accept, "If-None-Match", inm)
			if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 || rec.Header().Get("ETag") != tc.etag {
				t.Fatalf("Accept-Encoding %q, If-None-Match %s: %d %v", tc.accept, inm, rec.Code, rec.Header())
			}
		}
	}
}

// writesRecorder records each Write with the Content-Length declared when it
// came.
type writesRecorder struct {
	*httptest.ResponseRecorder
	writes []struct {
		n             int
		contentLength string
	}
}

func (w *writesRecorder) Write(p []byte) (int, error) {
	w.writes = append(w.writes, struct {
		n             int
		contentLength string
	}{len(p), w.Header().Get("Content-Length")})
	return w.ResponseRecorder.Write(p)
}

// TestWriteRepresentation_200_TheBodyInOneWriteOfItsLength: either form of a
// document is written in one Write of the Content-Length already declared,
// which the server sends with its header in one write on the connection
// (platform/app, gather.go).
func TestWriteRepresentation_200_TheBodyInOneWriteOfItsLength(t *testing.T) {
	body := []byte(strings.Repeat(`{"a":"settings"}`, 2000))
	gz := httpx.Gzip(body)
	e := engine(func(c *gin.Context) error {
		httpx.WriteRepresentation(c, "application/json; charset=utf-8", body, gz, httpx.StrongETag(body), "private, max-age=300")
		return nil
	})
	for _, tc := range []struct {
		accept string
		body   []byte
	}{{"", body}, {"gzip", gz}} {
		req := httptest.NewRequest(http.MethodGet, "/x", nil)
		req.Header.Set("Accept-Encoding", tc.accept)
		w := &writesRecorder{ResponseRecorder: httptest.NewRecorder()}
		e.ServeHTTP(w, req)
		if w.Code != http.StatusOK || len(w.writes) != 1 || w.writes[0].n != len(tc.body) || w.writes[0].contentLength != strconv.Itoa(len(tc.body)) {
			t.Fatalf("Accept-Encoding %q: status %d, writes %+v; want one of %d bytes, declared", tc.accept, w.Code, w.writes, len(tc.body))
		}
	}
}
