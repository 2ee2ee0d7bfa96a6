package httpx

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// Precompressed representations: a document built once and served many times
// (the settings document, reference lists) is compressed once when it is
// built, and each request picks the form it accepts. On a phone's slow link
// the 30 KB settings document goes as ~5 KB, and the server writes 6 times
// fewer bytes per request at no CPU cost per request.

// gzipMin is the smallest body worth compressing.
const gzipMin = 1024

// Gzip compresses a body kept for many requests (best compression: it is
// paid once). It answers nil when compressing would not pay.
func Gzip(body []byte) []byte {
	if len(body) < gzipMin {
		return nil
	}
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil
	}
	if _, err := zw.Write(body); err != nil || zw.Close() != nil || b.Len() >= len(body) {
		return nil
	}
	return b.Bytes()
}

// GzipETag is the entity tag of the gzip form of a representation tagged
// etag: another tag, as RFC 9110 wants for another content coding, from
// which ETagMatches recognises the same content.
func GzipETag(etag string) string {
	if !strings.HasSuffix(etag, `"`) || len(etag) < 2 {
		return etag
	}
	return etag[:len(etag)-1] + gzipTagSuffix + `"`
}

const gzipTagSuffix = "-gzip"

// AcceptsGzip tells whether the request's Accept-Encoding allows gzip (by
// name or by "*", with a q-value above 0). It walks the header in place: it
// runs on every read of a kept representation.
func AcceptsGzip(r *http.Request) bool {
	rest := r.Header.Get("Accept-Encoding")
	for rest != "" {
		var part string
		part, rest, _ = strings.Cut(rest, ",")
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.TrimSpace(name)
		if !strings.EqualFold(name, "gzip") && !strings.EqualFold(name, "x-gzip") && name != "*" {
			continue
		}
		q := 1.0
		for params != "" {
			var p string
			p, params, _ = strings.Cut(params, ";")
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		return q > 0
	}
	return false
}

// Header values every kept representation shares (never appended to in
// place: Header.Add copies a slice whose capacity is full).
var (
	varyAcceptEncoding = []string{"Accept-Encoding"}
	gzipEncoding       = []string{"gzip"}
)

// WriteRepresentation answers a kept representation: 304 when the client's
// If-None-Match names it (in either form), else the gzip form when there is
// one and the client accepts it, else the body as it is. Both forms carry
// Vary: Accept-Encoding, so shared caches keep them apart. The headers go
// into the map under their canonical names and the body is written as it
// is: this is the hottest read of the API (the settings document).
func WriteRepresentation(c *gin.Context, contentType string, body, gz []byte, etag, cacheControl string) {
	h := c.Writer.Header()
	useGzip := gz != nil && AcceptsGzip(c.Request)
	if gz != nil {
		if _, set := h["Vary"]; set {
			h.Add("Vary", "Accept-Encoding") // after CORS's Origin
		} else {
			h["Vary"] = varyAcceptEncoding
		}
	}
	// The header values, each a slice of one array of them: one allocation
	// instead of one per header. Each slice's capacity is its length, so an
	// append to one copies it rather than writing over the next.
	v := new([4]string)
	v[0], v[1], v[2] = etag, cacheControl, contentType
	if useGzip {
		v[0] = GzipETag(etag)
	}
	var cc []string
	if cacheControl != "" {
		cc = v[1:2:2]
	}
	if conditional(c, v[0:1:1], cc) {
		return
	}
	if useGzip {
		h["Content-Encoding"] = gzipEncoding
		body = gz
	}
	h["Content-Type"] = v[2:3:3]
	// A known length spares the chunked encoding of a large document.
	v[3] = strconv.Itoa(len(body))
	h["Content-Length"] = v[3:4:4]
	c.Status(http.StatusOK)
	_, _ = c.Writer.Write(body) // a client gone mid-answer has nothing to be told
}
