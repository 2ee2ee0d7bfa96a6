package httpx

import (
	"bytes"
	"net/http"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"":                        false,
		"gzip":                    true,
		"GZIP":                    true,
		"br, gzip;q=0.5":          true,
		"deflate, br":             false,
		"gzip;q=0":                false,
		"gzip; q=0.0, identity":   false,
		"*":                       true,
		"*;q=0":                   false,
		"identity;q=1, x-gzip":    true,
		"gzipx":                   false,
		"gzip;level=9;q=0.001":    true,
		"  gzip  ;  q = 1  , br ": true,
	} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Accept-Encoding", header)
		if got := AcceptsGzip(r); got != want {
			t.Errorf("Accept-Encoding %q: %v, want %v", header, got, want)
		}
	}
}

func TestGzip_SmallOrIncompressibleIsNotCompressed(t *testing.T) {
	if Gzip([]byte(`{"a":1}`)) != nil {
		t.Fatal("a tiny body was compressed")
	}
	doc := bytes.Repeat([]byte(`{"name":"Wheat","grades":["Group 1","Group 2"]},`), 100)
	if gz := Gzip(doc); gz == nil || len(gz) >= len(doc) {
		t.Fatalf("a repetitive %d-byte document: gzip %d bytes", len(doc), len(gz))
	}
	noise := make([]byte, 4096)
	x := uint32(1)
	for i := range noise {
		x = x*1664525 + 1013904223
		noise[i] = byte(x >> 24)
	}
	if Gzip(noise) != nil {
		t.Fatal("incompressible bytes were kept compressed")
	}
}

func TestETagMatches_EitherForm(t *testing.T) {
	tag := `"abc"`
	gz := GzipETag(tag)
	if gz != `"abc-gzip"` {
		t.Fatalf("GzipETag: %s", gz)
	}
	for _, c := range []struct {
		inm, etag string
		want      bool
	}{
		{tag, gz, true}, {gz, tag, true}, {`W/` + gz, tag, true}, {`"abd-gzip"`, tag, false}, {`"abc-gzipx"`, tag, false},
	} {
		if got := ETagMatches(c.inm, c.etag); got != c.want {
			t.Errorf("If-None-Match %s against %s: %v, want %v", c.inm, c.etag, got, c.want)
		}
	}
}
