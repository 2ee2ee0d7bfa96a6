package tabular_test

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/tabular"
	"github.com/xuri/excelize/v2"
)

type line struct {
	n   int
	row []string
}

// readAll opens data and returns the header and every row with its line.
func readAll(t testing.TB, data []byte, o tabular.Options) ([]string, []line, error) {
	t.Helper()
	r, err := tabular.OpenWith(bytes.NewReader(data), "test", o)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	var out []line
	for {
		row, n, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.Header(), out, nil
		}
		if err != nil {
			return r.Header(), out, err
		}
		out = append(out, line{n, row})
	}
}

func wantCode(t *testing.T, err error, code apierr.Code) {
	t.Helper()
	e, ok := apierr.As(err)
	if !ok {
		t.Fatalf("error %v (%T), want *apierr.Error %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("code %s (%s), want %s", e.Code, e.Message, code)
	}
}

func TestCSV(t *testing.T) {
	cases := []struct {
		name   string
		data   string
		header []string
		rows   []line
	}{
		{"comma", "commodityId,type,grade,variety\n1,Milling,Group 1,Crusoe\n1,Milling,Group 1,Skyfall\n",
			[]string{"commodityId", "type", "grade", "variety"},
			[]line{{2, []string{"1", "Milling", "Group 1", "Crusoe"}}, {3, []string{"1", "Milling", "Group 1", "Skyfall"}}}},
		{"bom semicolon crlf", "\ufeffcommodityId;type;grade;variety\r\n1;Milling;Group 1;\"KWS Extase; new\"\r\n",
			[]string{"commodityId", "type", "grade", "variety"},
			[]line{{2, []string{"1", "Milling", "Group 1", "KWS Extase; new"}}}},
		{"tab", "a\tb\n1\t2\n", []string{"a", "b"}, []line{{2, []string{"1", "2"}}}},
		{"comma inside quoted header wins over semicolons", "\"a;b\",c\n1,2\n", []string{"a;b", "c"}, []line{{2, []string{"1", "2"}}}},
		{"blank lines and trailing cells skipped, lines kept", "\n\nh1,h2,,\n\n , \n1,2,,\nx,,,\n",
			[]string{"h1", "h2"}, []line{{6, []string{"1", "2"}}, {7, []string{"x"}}}},
		{"multi-line quoted cell", "a,b\n\"one\ntwo\",3\n4,5\n", []string{"a", "b"},
			[]line{{2, []string{"one\ntwo", "3"}}, {4, []string{"4", "5"}}}},
		{"ragged rows", "a,b,c\n1\n1,2,3,4\n", []string{"a", "b", "c"},
			[]line{{2, []string{"1"}}, {3, []string{"1", "2", "3", "4"}}}},
		{"header only", "a,b\n", []string{"a", "b"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, rows, err := readAll(t, []byte(c.data), tabular.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(h, c.header) {
				t.Fatalf("header %q, want %q", h, c.header)
			}
			if !reflect.DeepEqual(rows, c.rows) {
				t.Fatalf("rows %v, want %v", rows, c.rows)
			}
		})
	}
}

func TestBadFiles(t *testing.T) {
	junk := make([]byte, 64<<10)
	if _, err := rand.Read(junk); err != nil {
		t.Fatal(err)
	}
	junk[0] = 0x00 // never valid text, whatever the random bytes
	var plainZip bytes.Buffer
	zw := zip.NewWriter(&plainZip)
	w, _ := zw.Create("readme.txt")
	_, _ = w.Write([]byte("not a workbook"))
	_ = zw.Close()
	cases := []struct {
		name string
		data []byte
		code apierr.Code
	}{
		{"empty", nil, apierr.CodeBadRequest},
		{"only blanks", []byte(" \n\r\n\t\n"), apierr.CodeBadRequest},
		{"only separators", []byte(",,,\n , ,\n"), apierr.CodeBadRequest},
		{"random bytes", junk, apierr.CodeUnsupportedMedia},
		{"pdf", []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n"), apierr.CodeUnsupportedMedia},
		{"png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), apierr.CodeUnsupportedMedia},
		{"xls", []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\x00\x00"), apierr.CodeUnsupportedMedia},
		{"zip that is not a workbook", plainZip.Bytes(), apierr.CodeUnsupportedMedia},
		{"truncated zip", []byte("PK\x03\x04garbage"), apierr.CodeUnsupportedMedia},
		{"malformed quotes", []byte("a,b\n\"x\"y,2\n"), apierr.CodeBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := readAll(t, c.data, tabular.Options{})
			wantCode(t, err, c.code)
		})
	}
}

func TestLimits(t *testing.T) {
	t.Run("rows", func(t *testing.T) {
		data := "a\n" + strings.Repeat("x\n", 11)
		_, rows, err := readAll(t, []byte(data), tabular.Options{MaxRows: 10})
		wantCode(t, err, apierr.CodePayloadTooLarge)
		if len(rows) != 10 {
			t.Fatalf("%d rows before the limit, want 10", len(rows))
		}
	})
	t.Run("bytes", func(t *testing.T) {
		data := "a\n" + strings.Repeat("x\n", 5000)
		_, _, err := readAll(t, []byte(data), tabular.Options{MaxBytes: 4096})
		wantCode(t, err, apierr.CodePayloadTooLarge)
	})
	t.Run("line without newline", func(t *testing.T) {
		data := strings.Repeat("A", 3<<20)
		_, _, err := readAll(t, []byte(data), tabular.Options{})
		wantCode(t, err, apierr.CodeBadRequest)
		if !strings.Contains(err.Error(), "line 1 is longer") {
			t.Fatalf("message %v", err)
		}
	})
	t.Run("cells", func(t *testing.T) {
		data := "a\n" + strings.Repeat("x,", 20) + "x\n"
		_, _, err := readAll(t, []byte(data), tabular.Options{MaxCells: 10})
		wantCode(t, err, apierr.CodeBadRequest)
	})
	t.Run("behind http.MaxBytesReader", func(t *testing.T) {
		body := io.NopCloser(strings.NewReader("a\n" + strings.Repeat("x\n", 5000)))
		limited := http.MaxBytesReader(httptest.NewRecorder(), body, 1000)
		r, err := tabular.Open(limited, "x.csv")
		if err == nil {
			for err == nil {
				_, _, err = r.Next()
			}
		}
		wantCode(t, err, apierr.CodePayloadTooLarge)
	})
}

// workbook builds an XLSX with excelize: rows by 1-based row number.
func workbook(t testing.TB, rows map[int][]any) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	for n, cells := range rows {
		cell, err := excelize.CoordinatesToCellName(1, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.SetSheetRow("Sheet1", cell, &cells); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestXLSX(t *testing.T) {
	data := workbook(t, map[int][]any{
		1: {" commodityId ", "type", "grade", "variety"},
		2: {1, "Milling", "Group 1", "Crusoe"},
		5: {2, "Malting", "Spring", "Laureate"},
		6: {nil, nil, nil, nil},
		7: {3.5, true, "", "x"},
	})
	dir := t.TempDir()
	h, rows, err := readAll(t, data, tabular.Options{TempDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h, []string{"commodityId", "type", "grade", "variety"}) {
		t.Fatalf("header %q", h)
	}
	want := []line{
		{2, []string{"1", "Milling", "Group 1", "Crusoe"}},
		{5, []string{"2", "Malting", "Spring", "Laureate"}},
		{7, []string{"3.5", "TRUE", "", "x"}},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}

	t.Run("no header", func(t *testing.T) {
		_, _, err := readAll(t, workbook(t, nil), tabular.Options{TempDir: dir})
		wantCode(t, err, apierr.CodeBadRequest)
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Fatalf("temporary files left behind: %v", left)
		}
	})
	t.Run("rows limit", func(t *testing.T) {
		rows := map[int][]any{1: {"a"}}
		for i := 2; i < 20; i++ {
			rows[i] = []any{i}
		}
		_, _, err := readAll(t, workbook(t, rows), tabular.Options{MaxRows: 5, TempDir: dir})
		wantCode(t, err, apierr.CodePayloadTooLarge)
	})
	t.Run("unzip limit", func(t *testing.T) {
		rows := map[int][]any{1: {"a"}}
		for i := 2; i < 2000; i++ {
			rows[i] = []any{strings.Repeat("y", 100)}
		}
		_, _, err := readAll(t, workbook(t, rows), tabular.Options{MaxUnzipBytes: 10000, TempDir: dir})
		wantCode(t, err, apierr.CodePayloadTooLarge)
	})
	t.Run("upload limit", func(t *testing.T) {
		_, _, err := readAll(t, data, tabular.Options{MaxBytes: 1000, TempDir: dir})
		wantCode(t, err, apierr.CodePayloadTooLarge)
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Fatalf("temporary files left behind: %v", left)
		}
	})
}

func TestColumns(t *testing.T) {
	idx, err := tabular.Columns([]string{"Variety", "Commodity ID", "type", "grade", "notes"}, []string{"commodityId", "type", "grade", "variety"}, "comment", "notes")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"commodityId": 1, "type": 2, "grade": 3, "variety": 0, "notes": 4}
	if !reflect.DeepEqual(idx, want) {
		t.Fatalf("%v, want %v", idx, want)
	}
	_, err = tabular.Columns([]string{"type"}, []string{"commodityId", "type", "grade"})
	e, ok := apierr.As(err)
	if !ok || e.Code != apierr.CodeValidation || len(e.Validation) != 2 || e.Validation[0].Path != "header.commodityId" || e.Validation[1].Path != "header.grade" {
		t.Fatalf("missing columns: %+v", err)
	}
	if tabular.Cell([]string{"a"}, 3) != "" || tabular.Cell([]string{"a"}, 0) != "a" {
		t.Fatal("Cell")
	}
}

func TestResult(t *testing.T) {
	r := tabular.NewResult()
	r.Add(tabular.RowResult{Rows: "2", Status: tabular.StatusSuccess})
	r.Add(tabular.RowResult{Rows: "3", Status: tabular.StatusValidation, Message: []string{"bad"}})
	r.Add(tabular.RowResult{Rows: "4", Status: "weird"})
	if r.Success != 1 || r.Validation != 1 || r.Errors != 1 || r.Results[2].Status != tabular.StatusError || r.Results[0].Message == nil {
		t.Fatalf("%+v", r)
	}
}

// exercise reads everything a fuzzed upload yields; every failure must be an
// *apierr.Error of a client status, and nothing may panic.
func exercise(t *testing.T, data []byte, o tabular.Options) {
	r, err := tabular.OpenWith(bytes.NewReader(data), "fuzz", o)
	if err != nil {
		checkClientError(t, err)
		return
	}
	defer r.Close()
	if len(r.Header()) == 0 {
		t.Fatal("a reader without a header")
	}
	last := 0
	for {
		row, n, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			checkClientError(t, err)
			return
		}
		if len(row) == 0 || n <= last {
			t.Fatalf("row %q at line %d after line %d", row, n, last)
		}
		last = n
	}
}

func checkClientError(t *testing.T, err error) {
	e, ok := apierr.As(err)
	if !ok {
		t.Fatalf("error %v (%T) is not an *apierr.Error", err, err)
	}
	if s := e.Status(); s < 400 || s >= 500 {
		t.Fatalf("status %d for %v", s, err)
	}
}

func FuzzCSV(f *testing.F) {
	for _, s := range []string{
		"commodityId,type,grade,variety\n1,Milling,Group 1,Crusoe\n",
		"\ufeffa;b\r\n\"x;y\";2\r\n",
		"a\tb\n\"multi\nline\"\t3\n",
		"a,b\n\"unterminated\n",
		"", "\n\n", "PK\x03\x04", "\xd0\xcf\x11\xe0",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		exercise(t, data, tabular.Options{MaxRows: 1000, MaxRowBytes: 4096, TempDir: dir})
	})
}

func FuzzXLSX(f *testing.F) {
	f.Add(workbook(f, map[int][]any{1: {"a", "b"}, 2: {1, "x"}, 4: {"y", 2.5}}))
	f.Add(workbook(f, nil))
	f.Add(workbook(f, map[int][]any{1: {"commodityId", "type", "grade", "variety"}, 2: {1, "Milling", "Group 1", "Skyfall"}}))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		exercise(t, data, tabular.Options{MaxRows: 1000, MaxUnzipBytes: 8 << 20, TempDir: dir})
	})
}

func TestRowsFarDown(t *testing.T) {
	// One cell in the last row of a sheet: rejected without reading a million empty rows.
	data := workbook(t, map[int][]any{1: {"a"}, 1048576: {"far"}})
	_, _, err := readAll(t, data, tabular.Options{MaxRows: 1000, TempDir: t.TempDir()})
	wantCode(t, err, apierr.CodePayloadTooLarge)
	_, _, err = readAll(t, []byte("a\n"+strings.Repeat(",\n", 2000)+"x\n"), tabular.Options{MaxRows: 1000})
	wantCode(t, err, apierr.CodePayloadTooLarge)
}

// rawWorkbook zips the minimal parts of a workbook around a sheet and shared
// strings given as XML.
func rawWorkbook(t testing.TB, sheet, sst string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	parts := [][2]string{
		{"[Content_Types].xml", `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`},
		{"xl/workbook.xml", `<workbook xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", `<Relationships><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`},
		{"xl/worksheets/sheet1.xml", sheet},
	}
	if sst != "" {
		parts = append(parts, [2]string{"xl/sharedStrings.xml", sst})
	}
	for _, p := range parts {
		w, err := zw.Create(p[0])
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(w, p[1])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sheetXML(rows string) string {
	return `<worksheet><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>a</t></is></c></row>` + rows + `</sheetData></worksheet>`
}

func TestHostileBounds(t *testing.T) {
	dir := t.TempDir()
	o := tabular.Options{TempDir: dir, MaxCellBytes: 1000, MaxSharedStrings: 10, MaxSharedStringBytes: 5000, MaxTextBytes: 20000}
	manyStrings := `<sst>` + strings.Repeat(`<si><t>x</t></si>`, 11) + `</sst>`
	bigStrings := `<sst>` + strings.Repeat(`<si><t>`+strings.Repeat("y", 900)+`</t></si>`, 6) + `</sst>`
	amplified := `<row r="2">` + strings.Repeat(`<c t="s"><v>0</v></c>`, 10) + `</row>`
	var rows strings.Builder
	for r := 2; r < 40; r++ {
		fmt.Fprintf(&rows, `<row r="%d">%s</row>`, r, strings.Repeat(`<c t="s"><v>0</v></c>`, 1))
	}
	cases := []struct {
		name string
		data []byte
		code apierr.Code
		msg  string
	}{
		{"csv quoted record over the row limit", []byte("a\n\"" + strings.Repeat("x\n", 600) + "\"\n"), apierr.CodeBadRequest, "longer than 1000 bytes"},
		{"csv cell over the cell limit", []byte("a,b\n" + strings.Repeat("x", 1001) + ",1\n"), apierr.CodeBadRequest, "cell longer than 1000 bytes"},
		{"csv cells before parsing", []byte("a\n" + strings.Repeat(",", 2000) + "\n"), apierr.CodeBadRequest, "more than 1000 cells"},
		{"xlsx shared strings count", rawWorkbook(t, sheetXML(""), manyStrings), apierr.CodePayloadTooLarge, "more than 10 shared strings"},
		{"xlsx shared strings bytes", rawWorkbook(t, sheetXML(""), bigStrings), apierr.CodePayloadTooLarge, "more than 5000 bytes"},
		{"xlsx shared string over the cell limit", rawWorkbook(t, sheetXML(""), `<sst><si><t>`+strings.Repeat("z", 1001)+`</t></si></sst>`), apierr.CodePayloadTooLarge, "longer than 1000 bytes"},
		{"xlsx text run", rawWorkbook(t, sheetXML(`<row r="2">`+strings.Repeat(" ", 20000)+`</row>`), ""), apierr.CodePayloadTooLarge, "longer than 10096 bytes"},
		{"xlsx comment", rawWorkbook(t, sheetXML(`<!-- hi -->`), ""), apierr.CodeBadRequest, "comment"},
		{"xlsx depth", rawWorkbook(t, sheetXML(strings.Repeat("<x>", 40)+strings.Repeat("</x>", 40)), ""), apierr.CodeBadRequest, "deeper than 32"},
		{"xlsx inline cell over the limit", rawWorkbook(t, sheetXML(`<row r="2"><c t="inlineStr"><is><t>`+strings.Repeat("w", 1001)+`</t></is></c></row>`), ""), apierr.CodeBadRequest, "cell longer than 1000 bytes"},
		{"xlsx row over the row limit", rawWorkbook(t, sheetXML(amplified), `<sst><si><t>`+strings.Repeat("v", 900)+`</t></si></sst>`), apierr.CodeBadRequest, "longer than 5000 bytes"},
		{"xlsx text over the file limit", rawWorkbook(t, sheetXML(rows.String()), `<sst><si><t>`+strings.Repeat("u", 900)+`</t></si></sst>`), apierr.CodePayloadTooLarge, "more than 20000 bytes of text"},
		{"xlsx column beyond the cells", rawWorkbook(t, sheetXML(`<row r="2"><c r="AMA2"><v>1</v></c></row>`), ""), apierr.CodeBadRequest, "beyond the limit of 1000 cells"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			oo := o
			if c.name == "xlsx row over the row limit" {
				oo.MaxRowBytes = 5000
				oo.MaxTextBytes = 0
			}
			_, _, err := readAll(t, c.data, oo)
			wantCode(t, err, c.code)
			if !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("message %q, want it to name %q", err.Error(), c.msg)
			}
		})
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}
}

func TestZipBomb(t *testing.T) {
	// 64 MiB of spaces pack about 1000 times: refused before a byte is inflated.
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, p := range [][2]string{{"[Content_Types].xml", "<Types/>"}, {"xl/workbook.xml", `<workbook><sheets><sheet name="S"/></sheets></workbook>`}} {
		w, _ := zw.Create(p[0])
		_, _ = io.WriteString(w, p[1])
	}
	w, _ := zw.Create("xl/worksheets/sheet1.xml")
	_, _ = io.WriteString(w, sheetXML(""))
	spaces := bytes.Repeat([]byte(" "), 1<<20)
	for range 64 {
		_, _ = w.Write(spaces)
	}
	_ = zw.Close()
	_, _, err := readAll(t, buf.Bytes(), tabular.Options{TempDir: t.TempDir()})
	wantCode(t, err, apierr.CodePayloadTooLarge)
	if !strings.Contains(err.Error(), "zip bomb") {
		t.Fatalf("message %v", err)
	}
	_, _, err = readAll(t, buf.Bytes(), tabular.Options{TempDir: t.TempDir(), MaxUnzipBytes: 1 << 20})
	wantCode(t, err, apierr.CodePayloadTooLarge)
	if !strings.Contains(err.Error(), "over the limit of 1048576") {
		t.Fatalf("message %v", err)
	}
}

// TestFromRequest_XLSXSpooledOnce: an XLSX import is written to disk once (the
// spool that lets fields follow the file), read from there, and gone once the
// Reader is closed; fields after the file are read.
func TestFromRequest_XLSXSpooledOnce(t *testing.T) {
	data := workbook(t, map[int][]any{1: {"commodityId", "variety"}, 2: {1, "Crusoe"}})
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	fw, err := w.CreateFormFile("file", "v.xlsx")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(data)
	_ = w.WriteField("organisationId", "O1")
	_ = w.Close()
	req := httptest.NewRequest(http.MethodPost, "/import", &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	dir := t.TempDir()
	r, fields, err := tabular.FromRequest(req, "file", tabular.Options{TempDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if fields["organisationId"] != "O1" {
		t.Fatalf("fields after the file: %v", fields)
	}
	if files, _ := os.ReadDir(dir); len(files) != 1 {
		t.Fatalf("%d files spooled, want 1", len(files))
	}
	cells, _, err := r.Next()
	if err != nil || len(cells) != 2 || cells[1] != "Crusoe" {
		t.Fatalf("row %v %v", cells, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Fatalf("%d files left after Close", len(files))
	}
}
