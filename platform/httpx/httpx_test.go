package httpx_test

import (
	"encoding/csv"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
)

type item struct {
	Reference string   `json:"reference"`
	Weight    *float64 `json:"weight"`
	Nested    struct {
		Count int `json:"count"`
	} `json:"nested"`
}

func engine(h httpx.Handler) *gin.Engine {
	e := httpx.NewEngine(httpx.Options{MaxBodyBytes: 64, Version: "platform/1.0.0"})
	e.Any("/x", httpx.H(h))
	return e
}

func do(e *gin.Engine, method, target, ct, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

func TestBindJSONErrors(t *testing.T) {
	e := engine(func(c *gin.Context) error {
		var in item
		if err := httpx.BindJSON(c, &in); err != nil {
			return err
		}
		c.JSON(http.StatusOK, in)
		return nil
	})
	cases := []struct {
		name, ct, body string
		status         int
		code, path     string
	}{
		{"ok", "application/json", `{"reference":"R1"}`, 200, "", ""},
		{"malformed", "application/json", `{"reference":`, 400, "bad_request", ""},
		{"wrongType", "application/json", `{"reference":5}`, 400, "validation_failed", "reference"},
		{"nestedType", "application/json", `{"nested":{"count":"x"}}`, 400, "validation_failed", "nested.count"},
		{"notJSON", "text/plain", `{}`, 400, "bad_request", ""},
		{"empty", "application/json", ``, 400, "bad_request", ""},
		{"trailing", "application/json", `{} {}`, 400, "bad_request", ""},
		{"tooLarge", "application/json", `{"reference":"` + strings.Repeat("a", 100) + `"}`, 413, "payload_too_large", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := do(e, http.MethodPost, "/x", c.ct, c.body)
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, c.status, rec.Body)
			}
			if c.code != "" && !strings.Contains(rec.Body.String(), `"code":"`+c.code+`"`) {
				t.Fatalf("want code %s: %s", c.code, rec.Body)
			}
			if c.path != "" && !strings.Contains(rec.Body.String(), `"path":"`+c.path+`"`) {
				t.Fatalf("want path %s: %s", c.path, rec.Body)
			}
		})
	}
}

func TestDecodeOneOrMany(t *testing.T) {
	items, isList, err := httpx.DecodeOneOrMany[item]([]byte(`{"reference":"a"}`), 10)
	if err != nil || isList || len(items) != 1 || items[0].Reference != "a" {
		t.Fatalf("object: %v %v %v", items, isList, err)
	}
	items, isList, err = httpx.DecodeOneOrMany[item]([]byte(` [{"reference":"a"},{"reference":"b"}]`), 10)
	if err != nil || !isList || len(items) != 2 {
		t.Fatalf("array: %v %v %v", items, isList, err)
	}
	_, _, err = httpx.DecodeOneOrMany[item]([]byte(`[{"reference":1},{"reference":"ok"},{"weight":"x"}]`), 10)
	ae, ok := apierr.As(err)
	if !ok || len(ae.Validation) != 2 || ae.Validation[0].Path != "[0].reference" || ae.Validation[1].Path != "[2].weight" {
		t.Fatalf("every bad item with its index: %+v", err)
	}
	if _, _, err := httpx.DecodeOneOrMany[item]([]byte(`[{},{},{}]`), 2); !apierr.IsCode(err, apierr.CodeValidation) {
		t.Fatalf("over max items: %v", err)
	}
	if _, _, err := httpx.DecodeOneOrMany[item]([]byte(`[]`), 2); !apierr.IsCode(err, apierr.CodeValidation) {
		t.Fatalf("empty list: %v", err)
	}
}

func TestQueryAndPage(t *testing.T) {
	var got httpx.Page
	e := engine(func(c *gin.Context) error {
		q := httpx.NewQuery(c)
		got = q.Page([]string{"reference", "deliveryDateISO"}, "deliveryDateISO", true)
		q.Date("startDateISO", false)
		if err := q.Err(); err != nil {
			return err
		}
		c.Status(http.StatusNoContent)
		return nil
	})
	if rec := do(e, http.MethodGet, "/x", "", ""); rec.Code != 204 || got.Limit != 20 || got.Offset != 0 || got.SortBy != "deliveryDateISO" || !got.SortDesc {
		t.Fatalf("defaults: %d %+v", rec.Code, got)
	}
	if rec := do(e, http.MethodGet, "/x?limit=100&offset=5&sortBy=reference&sortDesc=false", "", ""); rec.Code != 204 || got.Limit != 100 || got.Offset != 5 || got.SortBy != "reference" || got.SortDesc {
		t.Fatalf("explicit: %d %+v", rec.Code, got)
	}
	for target, code := range map[string]string{
		"/x?limit=101":              "validation_failed",
		"/x?limit=0":                "validation_failed",
		"/x?offset=-1":              "validation_failed",
		"/x?limit=ten":              "bad_request",
		"/x?sortBy=password":        "bad_request",
		"/x?sortDesc=maybe":         "bad_request",
		"/x?startDateISO=yesterday": "validation_failed",
	} {
		rec := do(e, http.MethodGet, target, "", "")
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), `"code":"`+code+`"`) {
			t.Errorf("%s: %d %s, want 400 %s", target, rec.Code, rec.Body, code)
		}
	}
}

func TestCSVStreamEscapesFormulas(t *testing.T) {
	e := engine(func(c *gin.Context) error {
		w, err := httpx.StreamCSV(c, "loads.csv", []string{"reference", "note"})
		if err != nil {
			return err
		}
		for _, row := range [][]string{{"=1+2", "+cmd"}, {"-3", "@SUM(A1)"}, {"\tx", "safe, \"quoted\""}} {
			if err := w.Write(row); err != nil {
				return err
			}
		}
		return w.Close()
	})
	rec := do(e, http.MethodGet, "/x", "", "")
	if ct := rec.Header().Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Fatalf("content type %q", ct)
	}
	if cd := rec.Header().Get("Content-Disposition"); cd != `attachment; filename=loads.csv` {
		t.Fatalf("disposition %q", cd)
	}
	rows, err := csv.NewReader(rec.Body).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"reference", "note"}, {"'=1+2", "'+cmd"}, {"'-3", "'@SUM(A1)"}, {"'\tx", "safe, \"quoted\""}}
	for i := range want {
		if strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
			t.Fatalf("row %d: %q, want %q", i, rows[i], want[i])
		}
	}
}

func TestRequestIDAndVersionHeaders(t *testing.T) {
	e := engine(func(c *gin.Context) error { c.Status(204); return nil })
	rec := do(e, http.MethodGet, "/x", "", "", "X-Request-ID", "client-abc.123")
	if rec.Header().Get("X-Request-ID") != "client-abc.123" || rec.Header().Get("X-API-Version") != "platform/1.0.0" {
		t.Fatalf("headers %v", rec.Header())
	}
	rec = do(e, http.MethodGet, "/x", "", "", "X-Request-ID", "evil\r\nSet-Cookie: x")
	if id := rec.Header().Get("X-Request-ID"); len(id) != 36 {
		t.Fatalf("unsafe request id was echoed: %q", id)
	}
	rec = do(e, http.MethodGet, "/nope", "", "")
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), `"code":"not_found"`) || rec.Header().Get("X-Request-ID") == "" {
		t.Fatalf("unknown route: %d %s", rec.Code, rec.Body)
	}
}

func FuzzDecodeOneOrMany(f *testing.F) {
	for _, s := range []string{`{"reference":"a"}`, `[{"reference":"a"}]`, `[`, `[1,2]`, `{"weight":"x"}`, `null`, `[{"nested":{"count":1.5}}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		items, _, err := httpx.DecodeOneOrMany[item](raw, 50)
		if err != nil {
			if _, ok := apierr.As(err); !ok {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(items) == 0 || len(items) > 50 {
			t.Fatalf("%d items accepted", len(items))
		}
	})
}

func FuzzEscapeCell(f *testing.F) {
	for _, s := range []string{"=1", "+", "-", "@", "\tx", "\rx", "plain", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := httpx.EscapeCell(s)
		if out != "" && strings.ContainsRune("=+-@\t\r", rune(out[0])) {
			t.Fatalf("%q escaped to %q still starts with a formula character", s, out)
		}
		if strings.TrimPrefix(out, "'") != s && out != s {
			t.Fatalf("%q changed beyond the prefix: %q", s, out)
		}
	})
}
