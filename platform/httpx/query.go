package httpx

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/gin-gonic/gin"
)

// Query reads query parameters, collecting every problem: an unparseable value
// answers bad_request, an out-of-range one validation_failed.
type Query struct {
	c      *gin.Context
	fields apierr.Fields
	bad    []string
}

// NewQuery starts reading the request's query.
func NewQuery(c *gin.Context) *Query { return &Query{c: c} }

// Has tells whether the parameter is present and not blank.
func (q *Query) Has(name string) bool { return strings.TrimSpace(q.c.Query(name)) != "" }

// String returns a trimmed parameter.
func (q *Query) String(name string) string { return strings.TrimSpace(q.c.Query(name)) }

// Strings returns a repeated parameter; each value may also be comma separated.
func (q *Query) Strings(name string) []string {
	var out []string
	for _, v := range q.c.QueryArray(name) {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// RequiredString returns a parameter that must be present.
func (q *Query) RequiredString(name string) string {
	v := q.String(name)
	if v == "" {
		q.fields.Add(name, "required", "is required", nil)
	}
	return v
}

// Int returns an integer parameter or def when absent.
func (q *Query) Int(name string, def int) int {
	v := q.String(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		q.bad = append(q.bad, fmt.Sprintf("%s must be an integer", name))
		return def
	}
	return n
}

// Float returns a finite number parameter; ok is false when absent or bad.
func (q *Query) Float(name string) (v float64, ok bool) {
	s := q.String(name)
	if s == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		q.bad = append(q.bad, fmt.Sprintf("%s must be a number", name))
		return 0, false
	}
	return f, true
}

// RequiredFloat returns a number that must be present.
func (q *Query) RequiredFloat(name string) float64 {
	if !q.Has(name) {
		q.fields.Add(name, "required", "is required", nil)
		return 0
	}
	v, _ := q.Float(name)
	return v
}

// Bool returns a boolean parameter or def when absent.
func (q *Query) Bool(name string, def bool) bool {
	s := q.String(name)
	if s == "" {
		return def
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		q.bad = append(q.bad, fmt.Sprintf("%s must be true or false", name))
		return def
	}
	return b
}

// Date parses a date (2026-11-21) or an RFC 3339 date-time between MinDate
// and MaxDate; end-of-range dates may ask for the end of that day.
func (q *Query) Date(name string, endOfDay bool) (time.Time, bool) {
	s := q.String(name)
	if s == "" {
		return time.Time{}, false
	}
	t, dateOnly, ok := CheckDate(&q.fields, name, s)
	if !ok {
		return time.Time{}, false
	}
	if dateOnly && endOfDay {
		t = t.Add(24*time.Hour - time.Nanosecond)
	}
	return t, true
}

// Enum returns a parameter that must be one of allowed when present.
func (q *Query) Enum(name string, allowed ...string) string {
	v := q.String(name)
	if v != "" {
		q.fields.OneOf(name, v, allowed...)
	}
	return v
}

// Fields gives access to the collector, for checks specific to a route.
func (q *Query) Fields() *apierr.Fields { return &q.fields }

// Err returns the first parse problem, else the validation failures, else nil.
func (q *Query) Err() error {
	if len(q.bad) > 0 {
		return apierr.BadRequest("%s", strings.Join(q.bad, "; "))
	}
	return q.fields.Err()
}

// ParseDate accepts YYYY-MM-DD or RFC 3339; dateOnly tells which it was.
func ParseDate(s string) (t time.Time, dateOnly bool, err error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t.UTC(), true, nil
	}
	t, err = time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false, err
	}
	return t.UTC(), false, nil
}

// Page is the pagination and sorting of a list request.
type Page struct {
	Limit    int
	Offset   int
	SortBy   string
	SortDesc bool
}

// Page limits of API.md.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// Page reads limit, offset, sortBy and sortDesc. sortable lists the allowed
// sortBy values; an unknown one answers bad_request.
func (q *Query) Page(sortable []string, defaultSort string, defaultDesc bool) Page {
	p := Page{Limit: q.Int("limit", DefaultLimit), Offset: q.Int("offset", 0), SortBy: q.String("sortBy"), SortDesc: q.Bool("sortDesc", defaultDesc)}
	if p.Limit < 1 || p.Limit > MaxLimit {
		q.fields.Add("limit", "range", fmt.Sprintf("must be between 1 and %d", MaxLimit), map[string]any{"min": 1, "max": MaxLimit, "actual": p.Limit})
	}
	if p.Offset < 0 {
		q.fields.Add("offset", "range", "must not be negative", map[string]any{"min": 0, "actual": p.Offset})
	}
	if p.SortBy == "" {
		p.SortBy = defaultSort
		return p
	}
	for _, s := range sortable {
		if s == p.SortBy {
			return p
		}
	}
	q.bad = append(q.bad, fmt.Sprintf("sortBy must be one of %s", strings.Join(sortable, ", ")))
	return p
}
