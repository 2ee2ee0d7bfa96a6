package httpx

import "time"

// Since reads an RFC 3339 date-time (the updatedSinceUTC of catch-up
// requests): nil when absent; a malformed value is a validation failure named
// after the parameter, so the answer lists it with any other failing field.
func (q *Query) Since(name string) *time.Time {
	s := q.String(name)
	if s == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		q.fields.Add(name, "format", "must be an RFC 3339 date-time (2026-11-21T15:04:05Z)", map[string]any{"actual": truncateValue(s)})
		return nil
	}
	t = t.UTC()
	if !DateInRange(t) {
		q.fields.Add(name, "range", "must lie between 1900-01-01 and 2200-12-31", map[string]any{"min": "1900-01-01", "max": "2200-12-31", "actual": truncateValue(s)})
		return nil
	}
	return &t
}

// truncateValue keeps an echoed value short: the query can be long.
func truncateValue(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
