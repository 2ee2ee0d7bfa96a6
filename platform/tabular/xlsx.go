package tabular

import (
	"archive/zip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/agritrade/api/platform/apierr"
)

// The XLSX reader is this package's own, on archive/zip and encoding/xml,
// because a general workbook library holds more than a row in memory (excelize
// buffered a sheet of 400 MiB of whitespace whole: 1 GB for a 409 KB upload).
// Here every byte that is decompressed is counted and every piece of it that is
// kept is capped:
//
//   - the upload is spooled to a temporary file (a zip needs random access): disk, bounded by MaxBytes;
//   - a part whose declared size is over MaxUnzipBytes, or which unpacks more than
//     maxZipRatio times its packed size (a zip bomb), is refused before it is read;
//     archive/zip itself fails a part that unpacks to more than it declared, and
//     every part is read through an io.LimitReader as well;
//   - the XML is tokenised through xmlGuard, which fails a run of bytes from one
//     tag to the next longer than maxRun (encoding/xml buffers a whole text run
//     or tag: this is what bounds it) and refuses <! constructs (comments,
//     CDATA, DOCTYPE), and elements nested deeper than maxXMLDepth;
//   - the shared strings are kept in 1 MiB chunks, at most MaxSharedStringBytes
//     and MaxSharedStrings of them; a cell is at most MaxCellBytes, a row at most
//     MaxRowBytes and MaxCells cells; a row numbered past MaxRows+1 ends the read.
//
// What an XLSX import holds at a time is thus the shared strings (≤ 8 MiB plus
// 4 bytes an entry), one row (≤ 1 MiB) and a few buffers of the XML run size.

// maxZipRatio is the largest unpacked/packed ratio a part over zipRatioFloor
// may have. Spreadsheet XML packs 5 to 20 times; a bomb packs 1000 times.
const (
	maxZipRatio   = 100
	zipRatioFloor = 1 << 20
)

// maxXMLDepth bounds element nesting; a sheet nests 5 deep.
const maxXMLDepth = 32

// maxSmallPart caps the decompressed size of the workbook, relationship and
// content-type parts, which hold names and references only.
const maxSmallPart = 4 << 20

// Relationship types (transitional and strict OOXML).
const (
	relWorksheet     = "/worksheet"
	relSharedStrings = "/sharedStrings"
)

// xlsxSource streams the first sheet of a workbook spooled to a temporary file.
type xlsxSource struct {
	path string
	file *os.File
	// borrowed: file is FromRequest's spool, closed and removed by its owner.
	borrowed bool
	o        Options
	name     string
	sheet    io.ReadCloser
	dec      *xml.Decoder
	sst      *sharedStrings
	depth    int
	line     int // the row number last returned
}

// openXLSX spools the upload, checks it is an Office Open XML workbook, reads
// its shared strings and opens its first sheet as a token stream.
func openXLSX(r io.Reader, filename string, o Options) (src rowSource, err error) {
	s := &xlsxSource{o: o, name: displayName(filename)}
	defer func() {
		if err != nil {
			_ = s.close()
		}
	}()
	var size int64
	if o.spool != nil {
		// FromRequest has spooled the file part already (within MaxBytes):
		// read the zip from there rather than copy it to disk a second time.
		st, serr := o.spool.Stat()
		if serr != nil {
			return nil, apierr.Internal(fmt.Errorf("stat the import spool: %w", serr))
		}
		s.file, s.borrowed, size = o.spool, true, st.Size()
	} else {
		tmp, terr := os.CreateTemp(o.TempDir, "agritrade-import-*.xlsx")
		if terr != nil {
			return nil, apierr.Internal(fmt.Errorf("spool xlsx: %w", terr))
		}
		s.path, s.file = tmp.Name(), tmp
		if size, err = io.Copy(tmp, r); err != nil {
			return nil, readError(err)
		}
	}
	zr, err := zip.NewReader(s.file, size)
	if err != nil {
		return nil, unsupported("the file %s starts like a zip archive but is not a readable XLSX workbook", s.name)
	}
	parts := map[string]*zip.File{}
	for _, f := range zr.File {
		parts[strings.ToLower(strings.TrimPrefix(strings.ReplaceAll(f.Name, "\\", "/"), "/"))] = f
	}
	if parts["[content_types].xml"] == nil || parts["xl/workbook.xml"] == nil {
		return nil, unsupported("the file %s is a zip archive but not an XLSX workbook", s.name)
	}
	sheetPath, sstPath, err := s.locateParts(parts)
	if err != nil {
		return nil, err
	}
	s.sst = &sharedStrings{}
	if f := parts[sstPath]; f != nil {
		if err := s.readSharedStrings(f); err != nil {
			return nil, err
		}
	}
	f := parts[sheetPath]
	if f == nil {
		return nil, apierr.BadRequest("the XLSX file %s has no sheet", s.name)
	}
	rc, dec, err := s.openPart(f, o.MaxUnzipBytes)
	if err != nil {
		return nil, err
	}
	s.sheet, s.dec = rc, dec
	return s, nil
}

// locateParts finds the first sheet and the shared strings through the
// workbook and its relationships, falling back to the usual names.
func (s *xlsxSource) locateParts(parts map[string]*zip.File) (sheet, sst string, err error) {
	sheet, sst = "xl/worksheets/sheet1.xml", "xl/sharedstrings.xml"
	firstID := ""
	err = s.walkPart(parts["xl/workbook.xml"], maxSmallPart, func(el xml.StartElement) error {
		if el.Name.Local == "sheet" && firstID == "" {
			for _, a := range el.Attr {
				if a.Name.Local == "id" && strings.Contains(a.Name.Space, "relationships") {
					firstID = a.Value
				}
			}
			if firstID == "" {
				firstID = "-" // a sheet without a relationship: keep the fallback
			}
		}
		return nil
	})
	if err != nil {
		return "", "", err
	}
	if firstID == "" {
		return "", "", apierr.BadRequest("the XLSX file %s has no sheet", s.name)
	}
	rels := parts["xl/_rels/workbook.xml.rels"]
	if rels == nil {
		return sheet, sst, nil
	}
	err = s.walkPart(rels, maxSmallPart, func(el xml.StartElement) error {
		if el.Name.Local != "Relationship" {
			return nil
		}
		var id, typ, target string
		for _, a := range el.Attr {
			switch a.Name.Local {
			case "Id":
				id = a.Value
			case "Type":
				typ = a.Value
			case "Target":
				target = a.Value
			}
		}
		switch {
		case strings.HasSuffix(typ, relWorksheet) && id == firstID:
			sheet = partPath(target)
		case strings.HasSuffix(typ, relSharedStrings):
			sst = partPath(target)
		}
		return nil
	})
	return sheet, sst, err
}

// partPath resolves a relationship target of the workbook to a part name.
func partPath(target string) string {
	target = strings.ReplaceAll(target, "\\", "/")
	if strings.HasPrefix(target, "/") {
		return strings.ToLower(strings.TrimPrefix(path.Clean(target), "/"))
	}
	return strings.ToLower(path.Join("xl", target))
}

// openPart checks a part's declared sizes and opens it as a guarded XML stream.
func (s *xlsxSource) openPart(f *zip.File, limit int64) (io.ReadCloser, *xml.Decoder, error) {
	if f.UncompressedSize64 > uint64(limit) { //nolint:gosec // limit > 0: Options.withDefaults
		return nil, nil, apierr.New(apierr.CodePayloadTooLarge, "the XLSX file %s holds a part (%s) that unpacks to %d bytes, over the limit of %d", s.name, f.Name, f.UncompressedSize64, limit)
	}
	if f.UncompressedSize64 > zipRatioFloor && f.UncompressedSize64 > maxZipRatio*f.CompressedSize64 {
		return nil, nil, apierr.New(apierr.CodePayloadTooLarge, "the XLSX file %s holds a part (%s) packed more than %d times (%d bytes from %d): refused as a zip bomb", s.name, f.Name, maxZipRatio, f.UncompressedSize64, f.CompressedSize64)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, nil, apierr.Wrap(err, apierr.CodeBadRequest, "the XLSX file %s could not be read (%s)", s.name, f.Name)
	}
	g := &xmlGuard{r: io.LimitReader(rc, limit), max: s.maxRun()}
	dec := xml.NewDecoder(g)
	// Parts declare UTF-8; anything else is refused rather than converted.
	dec.CharsetReader = func(label string, input io.Reader) (io.Reader, error) {
		if strings.EqualFold(label, "utf-8") || strings.EqualFold(label, "utf8") {
			return input, nil
		}
		return nil, fmt.Errorf("encoding %q is not supported", label)
	}
	return rc, dec, nil
}

// maxRun is the longest tag-plus-text the XML guard lets through: a cell's
// text at its limit with every character escaped, and room for the tags.
func (s *xlsxSource) maxRun() int { return 6*s.o.MaxCellBytes + 4096 }

// walkPart calls fn with every start element of a small part.
func (s *xlsxSource) walkPart(f *zip.File, limit int64, fn func(xml.StartElement) error) error {
	rc, dec, err := s.openPart(f, limit)
	if err != nil {
		return err
	}
	defer func() { _ = rc.Close() }() // read-only
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return s.xmlError(f.Name, err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if depth++; depth > maxXMLDepth {
				return apierr.BadRequest("the XLSX file %s nests elements deeper than %d in %s", s.name, maxXMLDepth, f.Name)
			}
			if err := fn(el); err != nil {
				return err
			}
		case xml.EndElement:
			depth--
		}
	}
}

// xmlError turns a tokenising failure into the answer: the guard's bounds and
// the decompressed limit are 413s naming the bound, the rest a malformed file.
func (s *xlsxSource) xmlError(part string, err error) error {
	var run *runTooLong
	switch {
	case errors.As(err, &run):
		return apierr.New(apierr.CodePayloadTooLarge, "the XLSX file %s holds, in %s, a text or tag longer than %d bytes", s.name, part, run.max)
	case errors.Is(err, errMarkup):
		return apierr.BadRequest("the XLSX file %s holds a comment, CDATA or DOCTYPE in %s, which workbooks do not use", s.name, part)
	case errors.Is(err, zip.ErrFormat), errors.Is(err, zip.ErrChecksum), errors.Is(err, io.ErrUnexpectedEOF):
		return apierr.Wrap(err, apierr.CodeBadRequest, "the XLSX file %s is damaged (%s)", s.name, part)
	}
	return apierr.Wrap(err, apierr.CodeBadRequest, "the XLSX file %s could not be read (%s): %v", s.name, part, err)
}

// readSharedStrings loads the shared string table within its bounds.
func (s *xlsxSource) readSharedStrings(f *zip.File) error {
	rc, dec, err := s.openPart(f, s.o.MaxUnzipBytes)
	if err != nil {
		return err
	}
	defer func() { _ = rc.Close() }() // read-only
	var (
		depth     int
		inSI      bool
		inT       bool
		phonetic  int // inside <rPh>: phonetic hints are not the cell's text
		text      []byte
		truncated bool
	)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return s.xmlError(f.Name, err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if depth++; depth > maxXMLDepth {
				return apierr.BadRequest("the XLSX file %s nests elements deeper than %d in %s", s.name, maxXMLDepth, f.Name)
			}
			switch el.Name.Local {
			case "si":
				inSI, text, truncated = true, text[:0], false
			case "rPh":
				phonetic++
			case "t":
				inT = inSI && phonetic == 0
			}
		case xml.EndElement:
			depth--
			switch el.Name.Local {
			case "si":
				if truncated {
					return apierr.New(apierr.CodePayloadTooLarge, "the XLSX file %s holds a shared string longer than %d bytes", s.name, s.o.MaxCellBytes)
				}
				if err := s.sst.add(text, s.o); err != nil {
					return apierr.New(apierr.CodePayloadTooLarge, "the XLSX file %s: %v", s.name, err)
				}
				inSI = false
			case "rPh":
				phonetic--
			case "t":
				inT = false
			}
		case xml.CharData:
			if inT {
				if len(text)+len(el) > s.o.MaxCellBytes {
					truncated = true
					continue
				}
				text = append(text, el...)
			}
		}
	}
}

// next returns the next row that has a cell with a value, numbered by its
// row number in the sheet.
func (s *xlsxSource) next() ([]string, int, error) {
	var (
		row     []string
		rowNum  int
		inRow   bool
		col     int // the current cell's 0-based column
		typ     string
		inValue bool // inside <v>, or <t> of an inline string
		value   []byte
		hasVal  bool
		rowSize int
	)
	fail := func(err error) ([]string, int, error) { return nil, rowNum, err }
	for {
		tok, err := s.dec.Token()
		if errors.Is(err, io.EOF) {
			return nil, s.line, io.EOF
		}
		if err != nil {
			return fail(s.xmlError("the first sheet", err))
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if s.depth++; s.depth > maxXMLDepth {
				return fail(apierr.BadRequest("the XLSX file %s nests elements deeper than %d", s.name, maxXMLDepth))
			}
			switch el.Name.Local {
			case "row":
				rowNum = s.line + 1
				if v := attr(el, "r"); v != "" {
					n, err := strconv.Atoi(v)
					if err != nil || n <= s.line {
						return fail(apierr.BadRequest("the XLSX file %s has a row numbered %q after row %d", s.name, v, s.line))
					}
					rowNum = n
				}
				if rowNum > s.o.MaxRows+1 { // the header row comes on top
					return fail(apierr.New(apierr.CodePayloadTooLarge, "the file has more than %d rows", s.o.MaxRows))
				}
				inRow, row, rowSize, col = true, row[:0], 0, -1
			case "c":
				if !inRow {
					continue
				}
				col++
				if ref := attr(el, "r"); ref != "" {
					c, ok := columnOf(ref)
					if !ok || c < col {
						return fail(apierr.BadRequest("the XLSX file %s has a cell %q out of order at line %d", s.name, ref, rowNum))
					}
					col = c
				}
				typ, value, hasVal = attr(el, "t"), value[:0], false
			case "v":
				inValue, hasVal = true, true
			case "t":
				// Inline strings: <is><t>text</t></is>, or runs <is><r><t>.
				if typ == "inlineStr" {
					inValue, hasVal = true, true
				}
			}
		case xml.EndElement:
			s.depth--
			switch el.Name.Local {
			case "v", "t":
				inValue = false
			case "c":
				if !inRow || !hasVal {
					continue
				}
				cell, err := s.cellValue(typ, value, rowNum)
				if err != nil {
					return fail(err)
				}
				if cell == "" {
					continue
				}
				if col >= s.o.MaxCells {
					return fail(apierr.BadRequest("line %d has a cell in column %d, beyond the limit of %d cells", rowNum, col+1, s.o.MaxCells))
				}
				if rowSize += len(cell); rowSize > s.o.MaxRowBytes {
					return fail(apierr.BadRequest("line %d is longer than %d bytes", rowNum, s.o.MaxRowBytes))
				}
				for len(row) < col {
					row = append(row, "")
				}
				row = append(row, cell)
			case "row":
				inRow = false
				s.line = rowNum
				if len(row) > 0 {
					return row, rowNum, nil
				}
			}
		case xml.CharData:
			if inValue {
				if len(value)+len(el) > s.o.MaxCellBytes {
					return fail(apierr.BadRequest("line %d has a cell longer than %d bytes", rowNum, s.o.MaxCellBytes))
				}
				value = append(value, el...)
			}
		}
	}
}

// cellValue renders a cell as text the way a spreadsheet shows a General cell.
func (s *xlsxSource) cellValue(typ string, v []byte, line int) (string, error) {
	switch typ {
	case "s":
		i, err := strconv.Atoi(strings.TrimSpace(string(v)))
		if err != nil || i < 0 || i >= s.sst.len() {
			return "", apierr.BadRequest("the XLSX file %s refers to a missing shared string at line %d", s.name, line)
		}
		return s.sst.get(i), nil
	case "b":
		switch strings.TrimSpace(string(v)) {
		case "1":
			return "TRUE", nil
		case "0":
			return "FALSE", nil
		}
		return string(v), nil
	case "", "n":
		t := strings.TrimSpace(string(v))
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return t, nil
		}
		// 15 significant digits, as spreadsheets show: 0.1+0.2 reads 0.3.
		f, _ = strconv.ParseFloat(strconv.FormatFloat(f, 'g', 15, 64), 64)
		return strconv.FormatFloat(f, 'f', -1, 64), nil
	default: // str (formula text), inlineStr, e (error), d (ISO date)
		return string(v), nil
	}
}

func (s *xlsxSource) close() error {
	var errs []error
	if s.sheet != nil {
		errs = append(errs, s.sheet.Close())
		s.sheet = nil
	}
	if s.file != nil && !s.borrowed {
		errs = append(errs, s.file.Close())
	}
	s.file = nil
	if s.path != "" {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		s.path = ""
	}
	s.sst = nil
	return errors.Join(errs...)
}

func attr(el xml.StartElement, name string) string {
	for _, a := range el.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// columnOf returns the 0-based column of a cell reference such as "AB12".
func columnOf(ref string) (int, bool) {
	col, i := 0, 0
	for ; i < len(ref) && i < 4; i++ {
		c := ref[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c < 'A' || c > 'Z' {
			break
		}
		col = col*26 + int(c-'A'+1)
	}
	if i == 0 || col > 16384 { // XFD, the last column of a sheet
		return 0, false
	}
	return col - 1, true
}

// sharedStrings holds the table in fixed chunks, so that it never exceeds its
// bound by an append's doubling; ends[i] is where string i ends.
type sharedStrings struct {
	chunks [][]byte
	size   int
	ends   []uint32
}

const sstChunk = 1 << 20

func (t *sharedStrings) add(b []byte, o Options) error {
	if len(t.ends) >= o.MaxSharedStrings {
		return fmt.Errorf("more than %d shared strings", o.MaxSharedStrings)
	}
	if t.size+len(b) > o.MaxSharedStringBytes {
		return fmt.Errorf("shared strings of more than %d bytes", o.MaxSharedStringBytes)
	}
	for len(b) > 0 {
		if len(t.chunks) == 0 || len(t.chunks[len(t.chunks)-1]) == sstChunk {
			t.chunks = append(t.chunks, make([]byte, 0, sstChunk))
		}
		last := &t.chunks[len(t.chunks)-1]
		n := min(len(b), sstChunk-len(*last))
		*last = append(*last, b[:n]...)
		b = b[n:]
		t.size += n
	}
	t.ends = append(t.ends, uint32(t.size)) //nolint:gosec // size <= MaxSharedStringBytes, far below 4 GiB
	return nil
}

func (t *sharedStrings) len() int { return len(t.ends) }

func (t *sharedStrings) get(i int) string {
	start := 0
	if i > 0 {
		start = int(t.ends[i-1])
	}
	end := int(t.ends[i])
	var b strings.Builder
	b.Grow(end - start)
	for start < end {
		c := t.chunks[start/sstChunk]
		off := start % sstChunk
		n := min(end-start, len(c)-off)
		b.Write(c[off : off+n])
		start += n
	}
	return b.String()
}

// errMarkup is the guard's refusal of <! constructs.
var errMarkup = errors.New("XML comment, CDATA or DOCTYPE")

// runTooLong is the guard's error for an over-long run.
type runTooLong struct{ max int }

func (e *runTooLong) Error() string {
	return fmt.Sprintf("an XML text or tag longer than %d bytes", e.max)
}

// xmlGuard passes XML through while no run from one '<' to the next exceeds
// max bytes; a processing instruction (<?...?>) counts as one run. encoding/xml
// holds a whole text run, tag, comment or CDATA section in memory: runs bound
// the first two, and the others are refused (no workbook part needs them).
type xmlGuard struct {
	r     io.Reader
	max   int
	run   int
	prev  byte
	inPI  bool
	atLT  bool
	total int64
}

func (g *xmlGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	for _, c := range p[:n] {
		if g.atLT {
			g.atLT = false
			switch c {
			case '!':
				return 0, errMarkup
			case '?':
				g.inPI = true
			}
		}
		switch {
		case g.inPI:
			if c == '>' && g.prev == '?' {
				g.inPI = false
			}
		case c == '<':
			g.run, g.atLT = 0, true
		}
		g.prev = c
		if g.run++; g.run > g.max {
			return 0, &runTooLong{max: g.max}
		}
	}
	g.total += int64(n)
	return n, err
}
