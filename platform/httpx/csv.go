package httpx

import (
	"encoding/csv"
	"mime"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// CSVWriter streams CSV rows to the client, flushing as it goes so that memory
// stays constant at any size, and defusing spreadsheet formulas.
type CSVWriter struct {
	c    *gin.Context
	w    *csv.Writer
	rows int
}

// flushEvery is how many rows are buffered before they go to the client.
const flushEvery = 256

// StreamCSV starts a CSV download with a header row.
func StreamCSV(c *gin.Context, filename string, header []string) (*CSVWriter, error) {
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": filename}))
	c.Header("Cache-Control", "no-store")
	c.Status(http.StatusOK)
	w := &CSVWriter{c: c, w: csv.NewWriter(c.Writer)}
	return w, w.Write(header)
}

// Write writes one row, escaping cells that a spreadsheet would run as formulas.
func (w *CSVWriter) Write(row []string) error {
	for i, cell := range row {
		row[i] = EscapeCell(cell)
	}
	if err := w.w.Write(row); err != nil {
		return err
	}
	w.rows++
	if w.rows%flushEvery == 0 {
		w.w.Flush()
		w.c.Writer.Flush()
	}
	return w.w.Error()
}

// Close flushes what is left.
func (w *CSVWriter) Close() error {
	w.w.Flush()
	w.c.Writer.Flush()
	return w.w.Error()
}

// EscapeCell prefixes a cell with ' when it starts with a character that makes
// spreadsheets evaluate it (=, +, -, @, tab, CR): CSV formula injection.
func EscapeCell(s string) string {
	if s == "" {
		return s
	}
	if strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
