package httpx

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// StrongETag returns the quoted strong entity tag of a representation: the
// first 128 bits of its SHA-256, so every replica computes the same tag.
func StrongETag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// ETagMatches tells whether an If-None-Match header value matches etag, with
// the weak comparison RFC 9110 prescribes for If-None-Match: "*", or any listed
// tag equal to etag once W/ prefixes (and the gzip form's suffix) are ignored.
func ETagMatches(ifNoneMatch, etag string) bool {
	if ifNoneMatch == "" || etag == "" {
		return false
	}
	want := sameContent(etag)
	for _, t := range strings.Split(ifNoneMatch, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || sameContent(t) == want {
			return true
		}
	}
	return false
}

// sameContent reduces a tag to what names the content: without W/ and
// without the suffix of the gzip form (GzipETag), so that a client holding
// either form of a representation gets 304.
func sameContent(tag string) string {
	tag = strings.TrimPrefix(tag, "W/")
	if strings.HasSuffix(tag, gzipTagSuffix+`"`) {
		tag = tag[:len(tag)-len(gzipTagSuffix)-1] + `"`
	}
	return tag
}

// Conditional sets ETag and Cache-Control and, when the request's
// If-None-Match matches, answers 304 without a body and returns true: the
// handler then has nothing left to write.
func Conditional(c *gin.Context, etag, cacheControl string) bool {
	var cc []string
	if cacheControl != "" {
		cc = []string{cacheControl}
	}
	return conditional(c, []string{etag}, cc)
}

// conditional is Conditional with the header values' slices made by the
// caller (WriteRepresentation makes all of its values in one allocation); a
// nil cacheControl sets none.
func conditional(c *gin.Context, etag, cacheControl []string) bool {
	h := c.Writer.Header()
	h["Etag"] = etag
	if cacheControl != nil {
		h["Cache-Control"] = cacheControl
	}
	if ETagMatches(c.GetHeader("If-None-Match"), etag[0]) {
		c.Status(http.StatusNotModified)
		c.Writer.WriteHeaderNow()
		return true
	}
	return false
}
