package tabular

import (
	"strconv"
	"unicode/utf8"
)

// Row statuses of an import result.
const (
	StatusSuccess    = "success"
	StatusValidation = "validation"
	StatusError      = "error"
)

// Result is the answer of an import: counts and one result per data row.
type Result struct {
	Success    int         `json:"success"`
	Validation int         `json:"validation"`
	Errors     int         `json:"errors"`
	Results    []RowResult `json:"results"`
}

// RowResult is the outcome of one row (or a range of rows) of the file.
type RowResult struct {
	Rows      string   `json:"rows"`
	Status    string   `json:"status"` // success, validation, error
	Message   []string `json:"message"`
	Summary   string   `json:"summary"`
	ID        string   `json:"id"`
	Reference string   `json:"reference"`
}

// NewResult returns an empty result whose lists encode as [] rather than null.
func NewResult() *Result { return &Result{Results: []RowResult{}} }

// maxEcho caps the text a row result repeats from the file (reference,
// messages quoting cells), so that the result of a hostile file stays small.
const maxEcho = 256

// clip shortens s to at most maxEcho bytes, on a rune boundary, marking the cut.
func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	cut := maxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Add appends a row result and counts it by status. Texts longer than 256
// bytes are cut.
func (r *Result) Add(rr RowResult) {
	if rr.Message == nil {
		rr.Message = []string{}
	}
	for i, m := range rr.Message {
		rr.Message[i] = clip(m)
	}
	rr.Reference, rr.Summary = clip(rr.Reference), clip(rr.Summary)
	switch rr.Status {
	case StatusSuccess:
		r.Success++
	case StatusValidation:
		r.Validation++
	default:
		rr.Status = StatusError
		r.Errors++
	}
	r.Results = append(r.Results, rr)
}

// Line formats a line number for RowResult.Rows.
func Line(line int) string { return strconv.Itoa(line) }
