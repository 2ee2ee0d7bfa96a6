package httpx

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agritrade/api/platform/apierr"
	"github.com/gin-gonic/gin"
)

// Text that cannot be stored. PostgreSQL refuses NUL in text and bytes that
// are not UTF-8 (SQLite stores them, and they come back as mojibake or break
// the JSON of later answers), so every string from outside is checked before
// it reaches a feature: JSON bodies (ReadJSONBody, DecodeJSON), path and
// query parameters (the engine's middleware), multipart fields and imported
// cells (CheckText where they are read). A failure is a 400 naming the field,
// never a 500 from the database.

// Codes of the validation entries for text that cannot be stored.
const (
	CodeNULCharacter = "nul_character"
	CodeInvalidUTF8  = "invalid_utf8"
)

// TextProblem tells why s cannot be stored as text: its validation code and
// message, or two empty strings when it can.
func TextProblem(s string) (code, message string) {
	if !utf8.ValidString(s) {
		return CodeInvalidUTF8, "must be valid UTF-8 text"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return CodeNULCharacter, "must not contain NUL characters (U+0000)"
	}
	return "", ""
}

// CheckText records a failure at path when s cannot be stored as text, and
// tells whether it can.
func CheckText(f *apierr.Fields, path, s string) bool {
	code, msg := TextProblem(s)
	if code == "" {
		return true
	}
	f.Add(path, code, msg, nil)
	return false
}

// CheckTexts checks every value of a form (multipart text fields), naming
// each failing field; the names are visited in order so that answers are
// stable.
func CheckTexts(values map[string]string) error {
	names := make([]string, 0, len(values))
	for k := range values {
		names = append(names, k)
	}
	sort.Strings(names)
	var f apierr.Fields
	for _, k := range names {
		CheckText(&f, Printable(k), k)
		CheckText(&f, Printable(k), values[k])
	}
	return f.Err()
}

// Printable is a name fit to appear as a validation path: a name that is not
// text itself (a hostile query key) is shown with its bad bytes replaced.
func Printable(name string) string {
	if code, _ := TextProblem(name); code == "" {
		return name
	}
	return strings.ReplaceAll(strings.ToValidUTF8(name, "\uFFFD"), "\x00", "\uFFFD")
}

// checkParams is the engine's middleware for path and query parameters: one
// that is not storable text answers 400 naming it, before any handler reads
// it (c.Param, c.Query and Query all read what this has checked). Requests
// that match no route are left to the 404.
func checkParams() gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.FullPath() == "" {
			c.Next()
			return
		}
		var f apierr.Fields
		for _, p := range c.Params {
			CheckText(&f, p.Key, p.Value)
		}
		if c.Request.URL.RawQuery != "" {
			q := c.Request.URL.Query()
			keys := make([]string, 0, len(q))
			for k := range q {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if !CheckText(&f, Printable(k), k) {
					continue
				}
				for _, v := range q[k] {
					if !CheckText(&f, k, v) {
						break
					}
				}
			}
		}
		if err := f.Err(); err != nil {
			apierr.Render(c, err)
			return
		}
		c.Next()
	}
}

// MaxJSONDepth bounds the nesting of JSON bodies (objects and arrays): the
// deepest body of the contract has 5 levels; 32 leaves room and stops a
// 10,000-deep body before any decoder recurses into it.
const MaxJSONDepth = 32

// maxTextProblems caps the validation entries one body can produce, so that a
// body of many bad strings gets a small answer.
const maxTextProblems = 50

// CheckJSON scans raw JSON before it is decoded: nesting deeper than
// MaxJSONDepth answers bad_request; strings (member names and values) that
// cannot be stored as text, lone UTF-16 surrogates among them, and member
// names given twice in one object answer validation_failed naming each one
// by its path ("items[3].name", "[2].reference"), under prefix. Malformed JSON
// is left to the decoder, which reports it; CheckJSON then says nothing
// beyond what it found before the syntax error.
func CheckJSON(raw []byte, prefix string) error {
	s := jsonScan{raw: raw}
	s.f = &apierr.Fields{}
	if prefix != "" {
		s.f = s.f.At(prefix)
	}
	if err := s.value(); err != nil {
		return err
	}
	return s.f.Err()
}

type jsonFrame struct {
	array bool
	index int
	key   string
	// keys are the member names seen in the object so far, in a slice
	// while few (kept from one object to the next at this depth: a map for
	// each object was a tenth of a listing create's allocations), in keySet
	// past maxKeyList.
	keys   []string
	keySet map[string]bool
}

// maxKeyList is how many member names an object's frame looks through one
// by one before it keeps them in a map.
const maxKeyList = 16

// seen records key as a member name of the object, answering whether it was
// given before.
func (fr *jsonFrame) seen(key string) bool {
	if fr.keySet == nil {
		if slices.Contains(fr.keys, key) {
			return true
		}
		fr.keys = append(fr.keys, key)
		if len(fr.keys) <= maxKeyList {
			return false
		}
		fr.keySet = make(map[string]bool, 2*len(fr.keys))
		for _, k := range fr.keys {
			fr.keySet[k] = true
		}
		return false
	}
	if fr.keySet[key] {
		return true
	}
	fr.keySet[key] = true
	return false
}

type jsonScan struct {
	raw      []byte
	i        int
	stack    []jsonFrame
	f        *apierr.Fields
	problems int
	broken   bool // a syntax error: stop, the decoder reports it
}

func (s *jsonScan) path() string { return pathOf(s.stack) }

func pathOf(stack []jsonFrame) string {
	var b strings.Builder
	for _, fr := range stack {
		if fr.array {
			b.WriteString("[" + strconv.Itoa(fr.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(fr.key)
	}
	return b.String()
}

func (s *jsonScan) problem(path, code, msg string, data map[string]any) {
	if s.problems < maxTextProblems {
		s.f.Add(path, code, msg, data)
	}
	s.problems++
}

func (s *jsonScan) skipSpace() {
	for s.i < len(s.raw) {
		switch s.raw[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// value scans one JSON value iteratively (no recursion: depth costs a frame
// on a slice bounded by MaxJSONDepth). It returns a non-nil error only for
// the depth bound.
func (s *jsonScan) value() error {
	for {
		s.skipSpace()
		if s.i >= len(s.raw) {
			return nil
		}
		switch c := s.raw[s.i]; c {
		case '{', '[':
			if len(s.stack) >= MaxJSONDepth {
				return apierr.BadRequest("the request body is nested deeper than %d levels", MaxJSONDepth)
			}
			s.i++
			s.push(c == '[')
			s.skipSpace()
			if s.i < len(s.raw) && (s.raw[s.i] == '}' || s.raw[s.i] == ']') {
				s.i++
				s.stack = s.stack[:len(s.stack)-1]
				if !s.next() {
					return nil
				}
				continue
			}
			if c == '{' && !s.member() {
				return nil
			}
			continue
		case '"':
			s.str(false)
		default:
			// A number or literal: the decoder judges its syntax.
			for s.i < len(s.raw) && !strings.ContainsRune(",]} \t\r\n", rune(s.raw[s.i])) {
				s.i++
			}
		}
		if s.broken || !s.next() {
			return nil
		}
	}
}

// push opens a frame for an array or object, reusing the key list an
// earlier object left at that depth.
func (s *jsonScan) push(array bool) {
	if len(s.stack) == cap(s.stack) {
		s.stack = append(s.stack, jsonFrame{array: array})
		return
	}
	s.stack = s.stack[:len(s.stack)+1]
	fr := &s.stack[len(s.stack)-1]
	*fr = jsonFrame{array: array, keys: fr.keys[:0]}
}

// member scans `"name":` of an object member; false stops the scan.
func (s *jsonScan) member() bool {
	s.skipSpace()
	if s.i >= len(s.raw) || s.raw[s.i] != '"' {
		s.broken = true
		return false
	}
	key, ok := s.str(true)
	if !ok {
		return false
	}
	top := &s.stack[len(s.stack)-1]
	top.key = key
	if top.seen(key) {
		s.problem(s.path(), "duplicate", "is given more than once", nil)
	}
	s.skipSpace()
	if s.i >= len(s.raw) || s.raw[s.i] != ':' {
		s.broken = true
		return false
	}
	s.i++
	return true
}

// next moves past the value just scanned: to the next element or member
// (true), or closes containers; false when the top-level value ended or the
// syntax broke.
func (s *jsonScan) next() bool {
	for {
		if len(s.stack) == 0 {
			return false
		}
		s.skipSpace()
		if s.i >= len(s.raw) {
			return false
		}
		top := &s.stack[len(s.stack)-1]
		switch c := s.raw[s.i]; {
		case c == ',':
			s.i++
			if top.array {
				top.index++
				return true
			}
			return s.member()
		case (c == ']' && top.array) || (c == '}' && !top.array):
			s.i++
			s.stack = s.stack[:len(s.stack)-1]
		default:
			s.broken = true
			return false
		}
	}
}

// str scans a string at s.i (the opening quote), recording a value that
// cannot be stored; as a member name (key) it records under the name and
// answers the decoded name. ok is false on a syntax error.
func (s *jsonScan) str(key bool) (name string, ok bool) {
	start := s.i
	s.i++
	var problem, msg string
	escaped := false
	for s.i < len(s.raw) {
		c := s.raw[s.i]
		switch {
		case c == '"':
			s.i++
			raw := s.raw[start:s.i]
			if key {
				name = string(raw[1 : len(raw)-1])
				if escaped {
					if err := json.Unmarshal(raw, &name); err != nil {
						s.broken = true
						return "", false
					}
				}
				name = Printable(name)
			}
			if problem != "" {
				p := s.path()
				if key {
					// The name is not stored yet: its path is its parent's and it.
					p = pathOf(s.stack[:len(s.stack)-1])
					if p == "" {
						p = name
					} else {
						p += "." + name
					}
					msg = "the member name " + msg
				}
				s.problem(p, problem, msg, nil)
			}
			return name, true
		case c == '\\':
			escaped = true
			if s.i+1 >= len(s.raw) {
				s.broken = true
				return "", false
			}
			if s.raw[s.i+1] != 'u' {
				s.i += 2
				continue
			}
			r, n := s.unicodeEscape(s.i)
			switch {
			case n == 0:
				s.broken = true
				return "", false
			case r == 0 && problem == "":
				problem, msg = CodeNULCharacter, "must not contain NUL characters (U+0000)"
			case r == utf8.RuneError && problem == "":
				problem, msg = CodeInvalidUTF8, "must be valid Unicode text (a lone UTF-16 surrogate escape)"
			}
			s.i += n
		case c < 0x20:
			s.broken = true
			return "", false
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, n := utf8.DecodeRune(s.raw[s.i:])
			if r == utf8.RuneError && n <= 1 && problem == "" {
				problem, msg = CodeInvalidUTF8, "must be valid UTF-8 text"
			}
			s.i += n
		}
	}
	s.broken = true
	return "", false
}

// unicodeEscape decodes \uXXXX (and a following low surrogate) at i: the
// rune (utf8.RuneError for a lone surrogate) and the bytes it spans, 0 when
// malformed.
func (s *jsonScan) unicodeEscape(i int) (rune, int) {
	hex4 := func(at int) (rune, bool) {
		if at+6 > len(s.raw) || s.raw[at] != '\\' || s.raw[at+1] != 'u' {
			return 0, false
		}
		var r rune
		for _, h := range s.raw[at+2 : at+6] {
			switch {
			case h >= '0' && h <= '9':
				r = r<<4 | rune(h-'0')
			case h >= 'a' && h <= 'f':
				r = r<<4 | rune(h-'a'+10)
			case h >= 'A' && h <= 'F':
				r = r<<4 | rune(h-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	r, ok := hex4(i)
	if !ok {
		return 0, 0
	}
	switch {
	case r >= 0xD800 && r < 0xDC00:
		if lo, ok := hex4(i + 6); ok && lo >= 0xDC00 && lo < 0xE000 {
			return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), 12
		}
		return utf8.RuneError, 6
	case r >= 0xDC00 && r < 0xE000:
		return utf8.RuneError, 6
	}
	return r, 6
}

// Dates from outside must lie in this range: a wider one is a typo or an
// attack, and far years break date arithmetic and some drivers' encodings.
var (
	MinDate = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxDate = time.Date(2200, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// DateInRange tells whether t lies between MinDate and MaxDate.
func DateInRange(t time.Time) bool { return !t.Before(MinDate) && !t.After(MaxDate) }

// CheckDate parses a date (YYYY-MM-DD) or an RFC 3339 date-time at path,
// recording a "format" failure when it is neither and a "range" failure when
// it lies outside MinDate..MaxDate.
func CheckDate(f *apierr.Fields, path, s string) (t time.Time, dateOnly, ok bool) {
	t, dateOnly, err := ParseDate(s)
	if err != nil {
		f.Add(path, "format", "must be a date (YYYY-MM-DD) or an RFC 3339 date-time", map[string]any{"actual": Printable(s)})
		return time.Time{}, false, false
	}
	if !DateInRange(t) {
		f.Add(path, "range", "must lie between 1900-01-01 and 2200-12-31", map[string]any{"min": "1900-01-01", "max": "2200-12-31", "actual": s})
		return time.Time{}, false, false
	}
	return t, dateOnly, true
}
