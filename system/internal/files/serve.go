package files

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// byteRange is one satisfiable range of a file.
type byteRange struct {
	start, length int64
}

// rangeResult says what a Range header asks for.
type rangeResult int

const (
	rangeNone          rangeResult = iota // no usable Range: send the whole file (200)
	rangePartial                          // one satisfiable range (206)
	rangeUnsatisfiable                    // outside the file (416)
)

// parseRange reads a Range header against a file of size bytes. One range is
// served; RFC 9110 lets a server ignore a Range it does not support, so a
// header with several ranges, another unit or bad syntax gets the whole file.
func parseRange(h string, size int64) (byteRange, rangeResult) {
	unit, spec, ok := strings.Cut(strings.TrimSpace(h), "=")
	if !ok || !strings.EqualFold(strings.TrimSpace(unit), "bytes") || strings.Contains(spec, ",") {
		return byteRange{}, rangeNone
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return byteRange{}, rangeNone
	}
	first, last = strings.TrimSpace(first), strings.TrimSpace(last)
	if first == "" {
		// Suffix range: the last n bytes.
		n, ok := digits(last)
		if !ok {
			return byteRange{}, rangeNone
		}
		if n == 0 || size == 0 {
			return byteRange{}, rangeUnsatisfiable
		}
		n = min(n, size)
		return byteRange{start: size - n, length: n}, rangePartial
	}
	start, ok := digits(first)
	if !ok {
		return byteRange{}, rangeNone
	}
	end := size - 1
	if last != "" {
		e, ok := digits(last)
		if !ok || e < start {
			return byteRange{}, rangeNone
		}
		end = min(e, size-1)
	}
	if start >= size {
		return byteRange{}, rangeUnsatisfiable
	}
	return byteRange{start: start, length: end - start + 1}, rangePartial
}

// digits parses a non-negative decimal without sign or overflow.
func digits(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// contentDisposition builds the header for a file name of any content
// (RFC 6266): a quoted ASCII fallback in filename, with every character a
// header or a file system could misread replaced by "_", and the exact name
// in filename* (RFC 8187, UTF-8, percent-encoded).
func contentDisposition(inline bool, name string) string {
	kind := "attachment"
	if inline {
		kind = "inline"
	}
	if name == "" {
		return kind
	}
	var fallback, exact strings.Builder
	for _, r := range name {
		switch {
		case r < 0x20 || r == 0x7f || r >= utf8.RuneSelf || r == utf8.RuneError:
			fallback.WriteByte('_')
		case r == '"' || r == '\\' || r == '/' || r == '%':
			fallback.WriteByte('_')
		default:
			fallback.WriteRune(r)
		}
	}
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(name); i++ {
		c := name[i]
		if isAttrChar(c) {
			exact.WriteByte(c)
			continue
		}
		exact.WriteByte('%')
		exact.WriteByte(hex[c>>4])
		exact.WriteByte(hex[c&15])
	}
	return kind + `; filename="` + fallback.String() + `"; filename*=UTF-8''` + exact.String()
}

// isAttrChar is RFC 8187's attr-char: what filename* carries unencoded.
func isAttrChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$&+-.^_`|~", c) >= 0
}

// etagMatches tells whether an If-None-Match list names etag (weak
// comparison, as RFC 9110 asks for If-None-Match), or is "*".
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
