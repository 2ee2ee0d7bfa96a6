package files

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/agritrade/api/platform/apierr"
)

func TestParseRange(t *testing.T) {
	cases := []struct {
		h             string
		size          int64
		start, length int64
		res           rangeResult
	}{
		{"bytes=0-0", 10, 0, 1, rangePartial},
		{"bytes=2-5", 10, 2, 4, rangePartial},
		{"bytes=2-", 10, 2, 8, rangePartial},
		{"bytes=5-100", 10, 5, 5, rangePartial},
		{"bytes=-3", 10, 7, 3, rangePartial},
		{"bytes=-30", 10, 0, 10, rangePartial},
		{"Bytes = 1 - 2", 10, 1, 2, rangePartial},
		{"bytes=10-", 10, 0, 0, rangeUnsatisfiable},
		{"bytes=10-20", 10, 0, 0, rangeUnsatisfiable},
		{"bytes=-0", 10, 0, 0, rangeUnsatisfiable},
		{"bytes=0-", 0, 0, 0, rangeUnsatisfiable},
		{"bytes=5-2", 10, 0, 0, rangeNone},
		{"bytes=0-1,4-5", 10, 0, 0, rangeNone},
		{"items=0-1", 10, 0, 0, rangeNone},
		{"bytes=a-b", 10, 0, 0, rangeNone},
		{"bytes=+1-2", 10, 0, 0, rangeNone},
		{"bytes=99999999999999999999-", 10, 0, 0, rangeNone},
		{"bytes", 10, 0, 0, rangeNone},
		{"bytes=-", 10, 0, 0, rangeNone},
	}
	for _, c := range cases {
		r, res := parseRange(c.h, c.size)
		if res != c.res || (res == rangePartial && (r.start != c.start || r.length != c.length)) {
			t.Errorf("parseRange(%q, %d) = %+v %v; want %d+%d %v", c.h, c.size, r, res, c.start, c.length, c.res)
		}
	}
}

// FuzzParseRange: a partial answer always lies inside the file.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-0", "bytes=-5", "bytes=3-", "bytes=1-2,3-4", "bytes=9223372036854775807-"} {
		f.Add(s, int64(100))
	}
	f.Fuzz(func(t *testing.T, h string, size int64) {
		if size < 0 {
			size = -size
		}
		if size < 0 {
			return
		}
		r, res := parseRange(h, size)
		if res == rangePartial && (r.start < 0 || r.length < 1 || r.start+r.length > size) {
			t.Fatalf("parseRange(%q, %d) = %+v outside the file", h, size, r)
		}
	})
}

func TestContentDisposition(t *testing.T) {
	cases := []struct {
		inline bool
		name   string
		want   string
	}{
		{false, "report.pdf", `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`},
		{true, "clip 1.mp4", `inline; filename="clip 1.mp4"; filename*=UTF-8''clip%201.mp4`},
		{false, `a"b\c/d%e.txt`, `attachment; filename="a_b_c_d_e.txt"; filename*=UTF-8''a%22b%5Cc%2Fd%25e.txt`},
		{false, "Kühe.pdf", `attachment; filename="K_he.pdf"; filename*=UTF-8''K%C3%BChe.pdf`},
		{false, "", "attachment"},
	}
	for _, c := range cases {
		if got := contentDisposition(c.inline, c.name); got != c.want {
			t.Errorf("contentDisposition(%q) = %s\nwant %s", c.name, got, c.want)
		}
	}
}

// FuzzContentDisposition: any name gives a header of printable ASCII that a
// standard parser reads back as exactly that name (names are valid UTF-8
// without control characters once the service has checked them).
func FuzzContentDisposition(f *testing.F) {
	for _, s := range []string{"a.pdf", "Kühe \"Weide\".png", "..\\..\\etc/passwd", "%41", "名前.txt", "a;b=c", "x\r\nSet-Cookie: a=b", "\xff\xfe"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, name string, inline bool) {
		h := contentDisposition(inline, name)
		for i := 0; i < len(h); i++ {
			if h[i] < 0x20 || h[i] > 0x7e {
				t.Fatalf("header %q has byte %#x", h, h[i])
			}
		}
		kind, params, err := mime.ParseMediaType(h)
		if err != nil {
			t.Fatalf("header %q does not parse: %v", h, err)
		}
		if want := map[bool]string{true: "inline", false: "attachment"}[inline]; kind != want {
			t.Fatalf("kind %q", kind)
		}
		valid := name != "" && utf8.ValidString(name) && !strings.ContainsFunc(name, unicode.IsControl)
		if valid && params["filename"] != name {
			t.Fatalf("header %q reads back as %q, want %q", h, params["filename"], name)
		}
	})
}

func TestEtagMatches(t *testing.T) {
	for h, want := range map[string]bool{`"abc"`: true, `W/"abc"`: true, `"x", "abc"`: true, `*`: true, `"abcd"`: false, `abc`: false, ``: false} {
		if got := etagMatches(h, `"abc"`); got != want {
			t.Errorf("etagMatches(%q) = %v", h, got)
		}
	}
}

// FuzzReadForm feeds arbitrary multipart bodies through the streaming
// binder: it never panics, every failure is a typed 400 or 413, and when it
// hands out a file, reading it ends in io.EOF or a typed error.
func FuzzReadForm(f *testing.F) {
	seed := func(parts ...string) string {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString("--B\r\n" + p + "\r\n")
		}
		b.WriteString("--B--\r\n")
		return b.String()
	}
	field := func(name, value string) string {
		return "Content-Disposition: form-data; name=\"" + name + "\"\r\n\r\n" + value
	}
	fileP := "Content-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n\x89PNG\r\n\x1a\nrest"
	f.Add(seed(field("bucket", "images"), field("type", "image"), field("name", "a.png"), fileP))
	f.Add(seed(fileP, field("name", "late")))
	f.Add(seed(field("bucket", "a"), field("bucket", "b")))
	f.Add(seed(field("organisations", "a,b"), field("organisations", "c"), fileP))
	f.Add("--B\r\n" + fileP)
	f.Add("not multipart at all")
	f.Add(seed("Content-Disposition: form-data; name=\"file\"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n=41=42"))
	f.Fuzz(func(t *testing.T, body string) {
		mr := multipart.NewReader(strings.NewReader(body), "B")
		f, part, err := readForm(mr)
		if err != nil {
			checkTyped(t, err)
			return
		}
		if part == nil {
			return
		}
		fb := &fileBody{part: part, mr: mr, form: f}
		_, err = io.Copy(io.Discard, io.LimitReader(fb, 1<<20))
		if err != nil {
			checkTyped(t, err)
		}
		if _, err := f.rest(); err != nil {
			checkTyped(t, err)
		}
	})
}

func checkTyped(t *testing.T, err error) {
	t.Helper()
	e, ok := apierr.As(err)
	if !ok {
		t.Fatalf("untyped error %v", err)
	}
	if s := e.Status(); s != http.StatusBadRequest && s != http.StatusRequestEntityTooLarge {
		t.Fatalf("error %v has status %d", err, s)
	}
}

// TestFileBody_FieldsAfterTheFileJoinTheForm: text fields and the file part
// come in any order (API.md); fields after the file complete the input once
// its bytes are read, and a second file part is refused.
func TestFileBody_FieldsAfterTheFileJoinTheForm(t *testing.T) {
	body := "--B\r\nContent-Disposition: form-data; name=\"bucket\"\r\n\r\nimages\r\n" +
		"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\ncontent\r\n" +
		"--B\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nlate.png\r\n" +
		"--B\r\nContent-Disposition: form-data; name=\"organisations\"\r\n\r\nO2,O3\r\n--B--\r\n"
	mr := multipart.NewReader(strings.NewReader(body), "B")
	f, part, err := readForm(mr)
	if err != nil || part == nil {
		t.Fatalf("readForm: %v %v", part, err)
	}
	if f.in.Bucket != "images" || f.in.Name != "" {
		t.Fatalf("before the file: %+v", f.in)
	}
	got, err := io.ReadAll(&fileBody{part: part, mr: mr, form: f})
	if err != nil || string(got) != "content" {
		t.Fatalf("read %q, err %v", got, err)
	}
	in, err := f.rest()
	if err != nil || in.Bucket != "images" || in.Name != "late.png" || strings.Join(in.Organisations, ",") != "O2,O3" {
		t.Fatalf("rest: %+v %v", in, err)
	}
	// A field repeated after the file is reported by rest, with its path.
	body = "--B\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\na\r\n" +
		"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\ncontent\r\n" +
		"--B\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nb\r\n--B--\r\n"
	mr = multipart.NewReader(strings.NewReader(body), "B")
	f, part, _ = readForm(mr)
	if _, err := io.ReadAll(&fileBody{part: part, mr: mr, form: f}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rest(); err == nil {
		t.Fatal("a repeated name after the file was accepted")
	} else if e, ok := apierr.As(err); !ok || e.Validation[0].Path != "name" || e.Validation[0].Code != "duplicate" {
		t.Fatalf("repeated name: %v", err)
	}
	// A second file part is refused.
	body = "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\none\r\n" +
		"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"b\"\r\n\r\ntwo\r\n--B--\r\n"
	mr = multipart.NewReader(strings.NewReader(body), "B")
	f, part, _ = readForm(mr)
	_, err = io.ReadAll(&fileBody{part: part, mr: mr, form: f})
	if e, ok := apierr.As(err); !ok || e.Code != apierr.CodeValidation || e.Validation[0].Path != "file" {
		t.Fatalf("second file: %v", err)
	}
	// Cut off before the closing boundary.
	body = "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\ncontent"
	mr = multipart.NewReader(strings.NewReader(body), "B")
	f, part, _ = readForm(mr)
	_, err = io.ReadAll(&fileBody{part: part, mr: mr, form: f})
	if e, ok := apierr.As(err); !ok || e.Code != apierr.CodeBadRequest || errors.Is(err, io.EOF) {
		t.Fatalf("truncated form: %v", err)
	}
}
