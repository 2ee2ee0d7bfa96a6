package tabular

import (
	"strconv"
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

// Add appends a row result and counts it by status.
func (r *Result) Add(rr RowResult) {
	if rr.Message == nil {
		rr.Message = []string{}
	}
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
