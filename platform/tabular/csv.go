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
	comma := sniffDelimiter(head)
	cr := csv.NewReader(&lineLimiter{r: br, max: o.MaxRowBytes, maxCells: o.MaxCells, comma: comma})
	cr.Comma = comma
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
			return nil, long.line, apierr.BadRequest("%s", long.Error())
		case errors.As(err, &pe) && pe.Err != nil && !errors.Is(pe.Err, errTooLarge):
			if errors.As(pe.Err, &long) {
				return nil, long.line, apierr.BadRequest("%s", long.Error())
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

// lineTooLong is the error of a record over the byte or cell limit.
type lineTooLong struct {
	line, max int
	cells     bool
}

func (e *lineTooLong) Error() string {
	if e.cells {
		return fmt.Sprintf("line %d has more than %d cells", e.line, e.max)
	}
	return fmt.Sprintf("line %d is longer than %d bytes", e.line, e.max)
}

// lineLimiter fails once a record exceeds max bytes or maxCells cells, before
// encoding/csv has buffered it: a file without newlines, a quoted cell that
// never closes, or a line of a million separators cannot grow one record
// without bound. Quotes toggle the state (an escaped "" toggles twice), so line
// breaks and separators inside quoted cells count toward the record.
type lineLimiter struct {
	r        io.Reader
	max      int
	maxCells int
	comma    rune // one of the ASCII delimiters sniffDelimiter picks
	cur      int
	cells    int
	quoted   bool
	line     int // physical lines seen
	start    int // physical line the current record starts on
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for _, c := range p[:n] {
		switch {
		case c == '"':
			l.quoted = !l.quoted
		case c == '\n':
			l.line++
			if !l.quoted {
				l.cur, l.cells, l.start = 0, 0, l.line
				continue
			}
		case rune(c) == l.comma && !l.quoted:
			if l.cells++; l.cells >= l.maxCells {
				return 0, &lineTooLong{line: l.start + 1, max: l.maxCells, cells: true}
			}
		}
		l.cur++
		if l.cur > l.max {
			return 0, &lineTooLong{line: l.start + 1, max: l.max}
		}
	}
	return n, err
}
