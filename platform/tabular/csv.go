package tabular

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"

	"github.com/agritrade/api/platform/apierr"
)

type csvSource struct {
	r *csv.Reader
}

// openCSV reads br as CSV: a UTF-8 BOM is dropped and the delimiter (comma,
// semicolon, as spreadsheets in many European locales write, or tab) is sniffed
// from the header line.
func openCSV(br *bufio.Reader, head []byte, o Options) (rowSource, error) {
	if bytes.HasPrefix(head, utf8BOM) {
		if _, err := br.Discard(len(utf8BOM)); err != nil {
			return nil, readError(err)
		}
		head = head[len(utf8BOM):]
	}
	cr := csv.NewReader(&lineLimiter{r: br, max: o.MaxRowBytes})
	cr.Comma = sniffDelimiter(head)
	cr.FieldsPerRecord = -1 // rows may be short or long: the import validates cells
	return &csvSource{r: cr}, nil
}

// sniffDelimiter picks the candidate that occurs most often outside quotes in
// the first line; a comma when none does.
func sniffDelimiter(head []byte) rune {
	counts := map[byte]int{}
	inQuotes := false
	for _, c := range head {
		if c == '"' {
			inQuotes = !inQuotes
			continue
		}
		if inQuotes {
			continue
		}
		if c == '\n' || c == '\r' {
			break
		}
		if c == ',' || c == ';' || c == '\t' {
			counts[c]++
		}
	}
	best, n := byte(','), 0
	for _, c := range []byte{',', ';', '\t'} {
		if counts[c] > n {
			best, n = c, counts[c]
		}
	}
	return rune(best)
}

func (s *csvSource) next() ([]string, int, error) {
	rec, err := s.r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, 0, io.EOF
		}
		var pe *csv.ParseError
		var long *lineTooLong
		switch {
		case errors.As(err, &long):
			return nil, long.line, apierr.BadRequest("line %d is longer than %d bytes", long.line, long.max)
		case errors.As(err, &pe) && pe.Err != nil && !errors.Is(pe.Err, errTooLarge):
			if errors.As(pe.Err, &long) {
				return nil, long.line, apierr.BadRequest("line %d is longer than %d bytes", long.line, long.max)
			}
			return nil, pe.StartLine, apierr.BadRequest("the CSV is malformed at line %d: %v", pe.Line, pe.Err)
		default:
			return nil, 0, err
		}
	}
	line, _ := s.r.FieldPos(0)
	return rec, line, nil
}

func (s *csvSource) close() error { return nil }

// lineTooLong is the error of a physical line over the limit.
type lineTooLong struct{ line, max int }

func (e *lineTooLong) Error() string {
	return fmt.Sprintf("line %d is longer than %d bytes", e.line, e.max)
}

// lineLimiter fails once a physical line exceeds max bytes, so that a file
// without newlines (junk, or a binary that passed as text) cannot grow one
// record without bound.
type lineLimiter struct {
	r    io.Reader
	max  int
	cur  int
	line int
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for _, c := range p[:n] {
		if c == '\n' {
			l.line++
			l.cur = 0
			continue
		}
		l.cur++
		if l.cur > l.max {
			return 0, &lineTooLong{line: l.line + 1, max: l.max}
		}
	}
	return n, err
}
