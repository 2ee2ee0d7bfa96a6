package httpx_test

import (
	"net/http"
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
