package tabular

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/xuri/excelize/v2"
)

// xlsxSource streams the first sheet of a workbook spooled to a temporary file.
type xlsxSource struct {
	path string
	f    *excelize.File
	rows *excelize.Rows
	line int
}

// openXLSX spools the upload, checks it is an Office Open XML workbook and
// opens its first sheet's row iterator.
func openXLSX(r io.Reader, filename string, o Options) (src rowSource, err error) {
	tmp, err := os.CreateTemp(o.TempDir, "agritrade-import-*.xlsx")
	if err != nil {
		return nil, apierr.Internal(fmt.Errorf("spool xlsx: %w", err))
	}
	path := tmp.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	_, cerr := io.Copy(tmp, r)
	if err := tmp.Close(); err != nil && cerr == nil {
		cerr = err
	}
	if cerr != nil {
		return nil, readError(cerr)
	}
	if err := checkWorkbook(path, filename); err != nil {
		return nil, err
	}
	// excelize is not hardened against every malformed file: a panic in it is
	// this upload's fault, not the server's.
	defer func() {
		if p := recover(); p != nil {
			err = apierr.Wrap(fmt.Errorf("excelize panic: %v", p), apierr.CodeBadRequest, "the XLSX file %s could not be read", displayName(filename))
		}
	}()
	xmlLimit := min(int64(16<<20), o.MaxUnzipBytes)
	f, err := excelize.OpenFile(path, excelize.Options{UnzipSizeLimit: o.MaxUnzipBytes, UnzipXMLSizeLimit: xmlLimit, TmpDir: o.TempDir})
	if err != nil {
		if f != nil {
			_ = f.Close()
		}
		if strings.Contains(err.Error(), "unzip size") {
			return nil, apierr.Wrap(err, apierr.CodePayloadTooLarge, "the XLSX file %s unpacks to more than %d bytes", displayName(filename), o.MaxUnzipBytes)
		}
		return nil, apierr.Wrap(err, apierr.CodeBadRequest, "the XLSX file %s could not be read", displayName(filename))
	}
	sheets := f.GetSheetList()
	if len(sheets) == 0 {
		_ = f.Close()
		return nil, apierr.BadRequest("the XLSX file %s has no sheet", displayName(filename))
	}
	rows, err := f.Rows(sheets[0])
	if err != nil {
		_ = f.Close()
		return nil, apierr.Wrap(err, apierr.CodeBadRequest, "the first sheet of %s could not be read", displayName(filename))
	}
	return &xlsxSource{path: path, f: f, rows: rows}, nil
}

// checkWorkbook tells an XLSX apart from any other zip (a .docx, an archive)
// by its package parts.
func checkWorkbook(path, filename string) error {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return unsupported("the file %s starts like a zip archive but is not a readable XLSX workbook", displayName(filename))
	}
	defer func() { _ = zr.Close() }() // read-only: a close error changes nothing
	var types, workbook bool
	for _, f := range zr.File {
		switch strings.ToLower(strings.ReplaceAll(f.Name, "\\", "/")) {
		case "[content_types].xml":
			types = true
		case "xl/workbook.xml":
			workbook = true
		}
	}
	if !types || !workbook {
		return unsupported("the file %s is a zip archive but not an XLSX workbook", displayName(filename))
	}
	return nil
}

func (s *xlsxSource) next() (row []string, line int, err error) {
	defer func() {
		if p := recover(); p != nil {
			row, err = nil, apierr.Wrap(fmt.Errorf("excelize panic: %v", p), apierr.CodeBadRequest, "the XLSX file could not be read after line %d", s.line)
		}
	}()
	if !s.rows.Next() {
		if err := s.rows.Error(); err != nil {
			return nil, s.line, apierr.Wrap(err, apierr.CodeBadRequest, "the XLSX file could not be read after line %d", s.line)
		}
		return nil, s.line, io.EOF
	}
	// Next advances one row number at a time, gaps included, so the count is
	// the sheet's row number.
	s.line++
	cells, err := s.rows.Columns()
	if err != nil {
		return nil, s.line, apierr.Wrap(err, apierr.CodeBadRequest, "the XLSX file could not be read at line %d", s.line)
	}
	return cells, s.line, nil
}

func (s *xlsxSource) close() error {
	var errs []error
	if s.rows != nil {
		errs = append(errs, s.rows.Close())
		s.rows = nil
	}
	if s.f != nil {
		errs = append(errs, s.f.Close())
		s.f = nil
	}
	if s.path != "" {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		s.path = ""
	}
	return errors.Join(errs...)
}
