// Package tabular reads the rows of uploaded spreadsheets, CSV or XLSX, for
// imports (varieties, load batches...). The format is detected from the bytes,
// never from the file name or the client's content type; anything else answers
// 415. Rows are streamed: a CSV is never held whole in memory, an XLSX is
// spooled to a temporary file (a zip needs random access) and its first sheet
// read by this package's own bounded streaming reader (xlsx.go). Limits on
// bytes, decompressed bytes, rows, row size, cells and cell size keep a hostile
// file from exhausting the server: whatever an upload holds, reading it costs
// at most a few tens of MiB (see Options for the bounds).
//
// Result and RowResult are the answer shape every import shares.
package tabular

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"unicode/utf8"

	"github.com/agritrade/api/platform/apierr"
)

// Reader streams rows of a CSV or XLSX upload (detected from the bytes, not the name).
type Reader interface {
	// Header is the first non-blank row, cells trimmed.
	Header() []string
	// Next returns the next non-blank row and its 1-based line in the file (the
	// header's line is 1 when the file starts with it); io.EOF at the end. Other
	// errors are *apierr.Error values fit to answer the request.
	Next() (row []string, line int, err error)
	// Close releases the reader (and removes any temporary file).
	Close() error
}

// Formats Detect tells apart.
const (
	FormatCSV  = "csv"
	FormatXLSX = "xlsx"
)

// Options bound what a reader accepts. Zero fields take the defaults.
type Options struct {
	// MaxBytes caps the upload (default 100 MiB); above it Next or Open answers 413.
	MaxBytes int64
	// MaxRows caps the rows after the header, blank ones included (default
	// 100 000); above it Next answers 413.
	MaxRows int
	// MaxRowBytes caps one row: a CSV record (quoted line breaks included) or
	// the text of an XLSX row (default 1 MiB); above it 400.
	MaxRowBytes int
	// MaxCells caps the cells of one row (default 1000); above it 400.
	MaxCells int
	// MaxCellBytes caps one cell (default 32 KiB); above it 400.
	MaxCellBytes int
	// MaxTextBytes caps the text of all the rows together (the cells Next
	// returns, after trimming; default 256 MiB); above it 413. XLSX shared
	// strings let a small file yield much text: this bounds the work of a
	// streaming import and the memory of one that keeps every row.
	MaxTextBytes int64
	// MaxUnzipBytes caps the uncompressed size of each part of an XLSX that is
	// read (default 256 MiB); a part packed more than 100 times (a zip bomb) is
	// refused too. Above either, 413.
	MaxUnzipBytes int64
	// MaxSharedStrings and MaxSharedStringBytes cap an XLSX's shared string
	// table, which is held in memory (defaults 500 000 strings, 8 MiB); above
	// either, 413.
	MaxSharedStrings     int
	MaxSharedStringBytes int
	// TempDir holds the spooled XLSX; the system's temporary directory when empty.
	TempDir string
	// spool is the file part FromRequest has already written to disk.
	spool *os.File
	// Gate, when set, limits the imports in flight: FromRequest takes a slot
	// before reading the body (429 when none is free) and Close gives it back.
	Gate *Gate
}

// Defaults of Options.
const (
	DefaultMaxBytes      = 100 << 20
	DefaultMaxRows       = 100000
	DefaultMaxRowBytes   = 1 << 20
	DefaultMaxCells      = 1000
	DefaultMaxCellBytes  = 32 << 10
	DefaultMaxTextBytes  = 256 << 20
	DefaultMaxUnzipBytes = 256 << 20

	DefaultMaxSharedStrings     = 500000
	DefaultMaxSharedStringBytes = 8 << 20
)

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxRows <= 0 {
		o.MaxRows = DefaultMaxRows
	}
	if o.MaxRowBytes <= 0 {
		o.MaxRowBytes = DefaultMaxRowBytes
	}
	if o.MaxCells <= 0 {
		o.MaxCells = DefaultMaxCells
	}
	if o.MaxCellBytes <= 0 {
		o.MaxCellBytes = DefaultMaxCellBytes
	}
	if o.MaxTextBytes <= 0 {
		o.MaxTextBytes = DefaultMaxTextBytes
	}
	if o.MaxUnzipBytes <= 0 {
		o.MaxUnzipBytes = DefaultMaxUnzipBytes
	}
	if o.MaxSharedStrings <= 0 {
		o.MaxSharedStrings = DefaultMaxSharedStrings
	}
	if o.MaxSharedStringBytes <= 0 {
		o.MaxSharedStringBytes = DefaultMaxSharedStringBytes
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	return o
}

// sniffSize is how much of the upload detection looks at.
const sniffSize = 8192

// Open detects the format of r and returns a reader positioned after the
// header row, with the default limits. filename only appears in messages.
func Open(r io.Reader, filename string) (Reader, error) {
	return OpenWith(r, filename, Options{})
}

// OpenWith is Open with explicit limits.
func OpenWith(r io.Reader, filename string, o Options) (Reader, error) {
	o = o.withDefaults()
	br := bufio.NewReaderSize(&limitedReader{r: r, left: o.MaxBytes, limit: o.MaxBytes}, sniffSize)
	head, err := br.Peek(sniffSize)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, readError(err)
	}
	format, err := Detect(head, filename)
	if err != nil {
		return nil, err
	}
	var rd rowSource
	if format == FormatXLSX {
		rd, err = openXLSX(br, filename, o)
	} else {
		rd, err = openCSV(br, head, o)
	}
	if err != nil {
		return nil, err
	}
	return newReader(rd, filename, o)
}

// Detect names the format of an upload from its first bytes: xlsx for an
// Office Open XML zip, csv for text. Anything else is a 415.
func Detect(head []byte, filename string) (string, error) {
	name := displayName(filename)
	switch {
	case len(bytes.TrimSpace(head)) == 0:
		return "", apierr.BadRequest("the file %s is empty: it needs a header row", name)
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		// A zip: whether it is a workbook is checked once it is spooled.
		return FormatXLSX, nil
	case bytes.HasPrefix(head, []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}):
		return "", unsupported("the file %s is a legacy Excel (.xls) workbook or another OLE document: save it as .xlsx or CSV", name)
	case looksLikeText(head):
		return FormatCSV, nil
	default:
		return "", unsupported("the file %s is neither CSV nor XLSX", name)
	}
}

// looksLikeText accepts UTF-8 (with or without BOM) without NUL or other
// control bytes than tab, CR and LF. A rune cut at the end of the sample is fine.
func looksLikeText(b []byte) bool {
	b = bytes.TrimPrefix(b, utf8BOM)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			return len(b) < utf8.UTFMax && !utf8.FullRune(b)
		}
		if r < 0x20 && r != '\t' && r != '\r' && r != '\n' || r == 0x7f {
			return false
		}
		b = b[size:]
	}
	return true
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func unsupported(format string, args ...any) *apierr.Error {
	return apierr.New(apierr.CodeUnsupportedMedia, format, args...)
}

func displayName(filename string) string {
	if filename == "" {
		return "uploaded"
	}
	return "'" + filename + "'"
}

// errTooLarge marks an upload over MaxBytes.
var errTooLarge = errors.New("upload larger than the limit")

// limitedReader fails, rather than stopping quietly like io.LimitReader, once
// more than left bytes come: a truncated import must not look complete.
type limitedReader struct {
	r     io.Reader
	left  int64
	limit int64
}

// overLimit is errTooLarge with the limit, for the message.
type overLimit struct{ limit int64 }

func (e *overLimit) Error() string {
	return fmt.Sprintf("upload larger than the limit of %d bytes", e.limit)
}
func (e *overLimit) Is(target error) bool { return target == errTooLarge }

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, &overLimit{l.limit}
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, &overLimit{l.limit}
	}
	return n, err
}

// readError turns a failure of the underlying upload into an API error.
func readError(err error) error {
	var ae *apierr.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, errTooLarge) || isMaxBytes(err):
		return apierr.New(apierr.CodePayloadTooLarge, "the file is larger than the upload limit of %d bytes", uploadLimit(err))
	default:
		return apierr.Wrap(err, apierr.CodeBadRequest, "the file could not be read")
	}
}

// uploadLimit is the byte limit an over-limit error names.
func uploadLimit(err error) int64 {
	var mbe *http.MaxBytesError
	var ol *overLimit
	switch {
	case errors.As(err, &ol):
		return ol.limit
	case errors.As(err, &mbe):
		return mbe.Limit
	}
	return 0
}

// isMaxBytes recognises the error of a body behind http.MaxBytesReader.
func isMaxBytes(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}
