package tabular

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agritrade/api/platform/apierr"
)

// rowSource is one format's raw row stream.
type rowSource interface {
	// next returns the next raw row and its line; io.EOF at the end.
	next() ([]string, int, error)
	close() error
}

// reader applies what both formats share: the header, blank rows, trimming and
// the row and cell limits.
type reader struct {
	src    rowSource
	o      Options
	header []string
	// read counts every row the source gave, blank ones included: a sheet
	// whose only cell sits in row 1 048 576 must not cost a million reads.
	read int
	// text is the bytes of the cells returned so far (for MaxTextBytes).
	text int64
}

func newReader(src rowSource, filename string, o Options) (Reader, error) {
	r := &reader{src: src, o: o}
	for {
		row, _, err := r.raw()
		if errors.Is(err, io.EOF) {
			_ = src.close()
			return nil, apierr.BadRequest("the file %s has no header row", displayName(filename))
		}
		if err != nil {
			_ = src.close()
			return nil, err
		}
		if row != nil {
			r.header = row
			return r, nil
		}
	}
}

func (r *reader) Header() []string { return r.header }

func (r *reader) Next() ([]string, int, error) {
	for {
		row, line, err := r.raw()
		if err != nil {
			return nil, line, err
		}
		if row == nil {
			continue
		}
		return row, line, nil
	}
}

// raw reads one row, trims its cells and drops trailing empty ones; a blank
// row comes back as nil.
func (r *reader) raw() ([]string, int, error) {
	row, line, err := r.src.next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, line, io.EOF
		}
		return nil, line, readError(err)
	}
	r.read++
	if r.read > r.o.MaxRows+1 { // the header row comes on top
		return nil, line, apierr.New(apierr.CodePayloadTooLarge, "the file has more than %d rows", r.o.MaxRows)
	}
	end := 0
	for i, c := range row {
		if len(c) > r.o.MaxCellBytes {
			return nil, line, apierr.BadRequest("line %d has a cell longer than %d bytes", line, r.o.MaxCellBytes)
		}
		c = strings.TrimSpace(c)
		row[i] = c
		if c != "" {
			end = i + 1
		}
	}
	if end == 0 {
		return nil, line, nil
	}
	if end > r.o.MaxCells {
		return nil, line, apierr.BadRequest("line %d has %d cells, more than the limit of %d", line, end, r.o.MaxCells)
	}
	for _, c := range row[:end] {
		r.text += int64(len(c))
	}
	if r.text > r.o.MaxTextBytes {
		return nil, line, apierr.New(apierr.CodePayloadTooLarge, "the file holds more than %d bytes of text (at line %d)", r.o.MaxTextBytes, line)
	}
	return row[:end:end], line, nil
}

func (r *reader) Close() error { return r.src.close() }

// Columns maps required and optional column names to their index in header,
// matching case-insensitively and ignoring spaces, dashes and underscores
// ("Commodity ID" finds commodityId). Every missing required column is listed
// in one 400 validation error, under the path "header.<name>".
func Columns(header []string, required []string, optional ...string) (map[string]int, error) {
	at := map[string]int{}
	for i, h := range header {
		k := normalise(h)
		if _, dup := at[k]; !dup && k != "" {
			at[k] = i
		}
	}
	out := map[string]int{}
	var f apierr.Fields
	for _, name := range required {
		if i, ok := at[normalise(name)]; ok {
			out[name] = i
		} else {
			f.Add("header."+name, "required", fmt.Sprintf("the header row has no %s column", name), map[string]any{"header": header})
		}
	}
	for _, name := range optional {
		if i, ok := at[normalise(name)]; ok {
			out[name] = i
		}
	}
	return out, f.Err()
}

func normalise(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '-', '_', '\t':
			return -1
		}
		return r
	}, strings.ToLower(strings.TrimSpace(s)))
}

// Cell returns row[i], or "" when the row is shorter or i is negative.
func Cell(row []string, i int) string {
	if i < 0 || i >= len(row) {
		return ""
	}
	return row[i]
}
