package imports

// TEMPORARY stand-ins until feat/refdata (platform/tabular) is merged.

// RowReader streams rows.
type RowReader interface {
	Header() []string
	Next() (row []string, line int, err error)
	Close() error
}

// Result is the import result.
type Result struct {
	Success    int         `json:"success"`
	Validation int         `json:"validation"`
	Errors     int         `json:"errors"`
	Results    []RowResult `json:"results"`
}

// RowResult is one row's result.
type RowResult struct {
	Rows      string   `json:"rows"`
	Status    string   `json:"status"`
	Message   []string `json:"message"`
	Summary   string   `json:"summary"`
	ID        string   `json:"id"`
	Reference string   `json:"reference"`
}
