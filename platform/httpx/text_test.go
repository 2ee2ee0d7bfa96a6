package httpx_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
)

// errorBody decodes an answer that must be the API.md error body.
func errorBody(t *testing.T, status int, ct, body string) apierr.Body {
	t.Helper()
	if !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%d answered Content-Type %q: %q", status, ct, body)
	}
	var b apierr.Body
	if err := json.Unmarshal([]byte(body), &b); err != nil || b.Status != "error" || b.Code == "" || b.Message == "" {
		t.Fatalf("%d answered no error body (%v): %q", status, err, body)
	}
	return b
}

func paths(b apierr.Body) []string {
	var out []string
	for _, v := range b.Validation {
		out = append(out, v.Path+":"+v.Code)
	}
	return out
}

func TestCheckJSON_400_NamesEveryStringThatCannotBeStored(t *testing.T) {
	cases := []struct {
		name, body string
		want       []string // path:code
	}{
		{"NUL escape in a value", `{"reference":"a\u0000b"}`, []string{"reference:nul_character"}},
		{"invalid UTF-8 in a value", "{\"reference\":\"a\xffb\"}", []string{"reference:invalid_utf8"}},
		{"lone surrogate", `{"reference":"\ud800x"}`, []string{"reference:invalid_utf8"}},
		{"lone low surrogate", `{"reference":"\udc00"}`, []string{"reference:invalid_utf8"}},
		{"deep in a list", `{"items":[{"name":"ok"},{"name":"ok"},{"name":"ok"},{"name":"\u0000"}]}`, []string{"items[3].name:nul_character"}},
		{"list body", `[{"reference":"a"},{"reference":"b","tags":["x","\u0000"]}]`, []string{"[1].tags[1]:nul_character"}},
		{"member name", "{\"na\xffme\":1}", []string{"na\uFFFDme:invalid_utf8"}},
		{"nested member name", `{"a":{"b\u0000":1}}`, []string{"a.b\uFFFD:nul_character"}},
		{"duplicate member", `{"reference":"a","reference":"b"}`, []string{"reference:duplicate"}},
		{"duplicate member through an escape", `{"a":1,"\u0061":2}`, []string{"a:duplicate"}},
		{"several", "{\"a\":\"\\u0000\",\"b\":{\"c\":[\"\xc3\"]}}", []string{"a:nul_character", "b.c[0]:invalid_utf8"}},
		// Past 16 names an object's frame keeps them in a map: early and
		// late names are found again alike.
		{"duplicates among many members", `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18,"k19":19,"k0":0,"k19":0}`, []string{"k0:duplicate", "k19:duplicate"}},
		// The frame of an object is reused for the next at its depth.
		{"duplicate in the object after another", `[{"a":1,"b":2},{"b":1,"b":2}]`, []string{"[1].b:duplicate"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := httpx.CheckJSON([]byte(tc.body), "")
			ae, ok := apierr.As(err)
			if !ok || ae.Code != apierr.CodeValidation {
				t.Fatalf("CheckJSON(%q) = %v, want validation_failed", tc.body, err)
			}
			got := paths(apierr.Body{Validation: ae.Validation})
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("CheckJSON(%q) named %v, want %v", tc.body, got, tc.want)
			}
		})
	}
}

func TestCheckJSON_PassesStorableText(t *testing.T) {
	for _, body := range []string{
		`{"reference":"Dún Laoghaire ✓ 😀 \ud83d\ude00 \u00e9 \n"}`, `[]`, `{}`, `[1,2,{"a":[true,false,null]}]`, `"x"`, `12.5e3`,
		`{"a":{"b":1},"c":{"b":2}}`,     // the same name in two objects is no duplicate
		`[{"a":1,"b":2},{"a":1,"b":2}]`, // nor in two objects one after the other at one depth
	} {
		if err := httpx.CheckJSON([]byte(body), ""); err != nil {
			t.Errorf("CheckJSON(%q) = %v", body, err)
		}
	}
	// Malformed JSON is the decoder's to report.
	for _, body := range []string{`{"a":`, `[,]`, `{"a" 1}`, `{"a":"x`, `{"a":"\u00"}`, "{\"a\":\"\x01\"}"} {
		if err := httpx.CheckJSON([]byte(body), ""); err != nil {
			t.Errorf("CheckJSON(%q) = %v, want nil (the decoder reports the syntax)", body, err)
		}
	}
}

func TestCheckJSON_400_DeeperThanTheBound(t *testing.T) {
	at := strings.Repeat("[", httpx.MaxJSONDepth) + strings.Repeat("]", httpx.MaxJSONDepth)
	if err := httpx.CheckJSON([]byte(at), ""); err != nil {
		t.Fatalf("%d levels refused: %v", httpx.MaxJSONDepth, err)
	}
	for _, body := range []string{
		strings.Repeat("[", httpx.MaxJSONDepth+1) + strings.Repeat("]", httpx.MaxJSONDepth+1),
		strings.Repeat("[", 10000), // unterminated
		strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
	} {
		err := httpx.CheckJSON([]byte(body), "")
		if !apierr.IsCode(err, apierr.CodeBadRequest) {
			t.Errorf("%.40s... (%d bytes) = %v, want bad_request", body, len(body), err)
		}
	}
}

func TestBindJSON_400_HostileBodiesGetTheErrorBody(t *testing.T) {
	e := engine(func(c *gin.Context) error {
		var in item
		if err := httpx.BindJSON(c, &in); err != nil {
			return err
		}
		c.JSON(http.StatusOK, in)
		return nil
	})
	e2 := httpx.NewEngine(httpx.Options{MaxBodyBytes: 1 << 20})
	e2.POST("/x", httpx.H(func(c *gin.Context) error {
		var in item
		if err := httpx.BindJSON(c, &in); err != nil {
			return err
		}
		c.JSON(http.StatusOK, in)
		return nil
	}))
	cases := []struct {
		name string
		e    *gin.Engine
		body string
		code string
		path string
	}{
		{"10,000-deep array", e2, strings.Repeat("[", 10000) + strings.Repeat("]", 10000), "bad_request", ""},
		{"10,000-deep object", e2, strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), "bad_request", ""},
		{"NUL", e, `{"reference":"\u0000"}`, "validation_failed", "reference"},
		{"invalid UTF-8", e, "{\"reference\":\"\xfe\"}", "validation_failed", "reference"},
		{"trailing data", e, `{"reference":"a"} {}`, "bad_request", ""},
		{"huge number", e, `{"nested":{"count":1e400}}`, "validation_failed", "nested.count"},
		{"huge integer", e, `{"nested":{"count":123456789012345678901234567890}}`, "validation_failed", "nested.count"},
		{"garbage", e, "\x00\x01\x02", "bad_request", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(tc.e, http.MethodPost, "/x", "application/json", tc.body)
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			b := errorBody(t, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
			if string(b.Code) != tc.code {
				t.Errorf("code %s, want %s: %s", b.Code, tc.code, rec.Body)
			}
			if tc.path != "" && (len(b.Validation) != 1 || b.Validation[0].Path != tc.path) {
				t.Errorf("validation %v, want %s", paths(b), tc.path)
			}
			if !utf8.Valid(rec.Body.Bytes()) {
				t.Errorf("the answer is not UTF-8: %q", rec.Body)
			}
		})
	}
}

func TestParams_400_NULOrInvalidUTF8InPathOrQuery(t *testing.T) {
	e := httpx.NewEngine(httpx.Options{})
	e.GET("/things/:id", httpx.H(func(c *gin.Context) error {
		c.JSON(http.StatusOK, gin.H{"id": c.Param("id"), "q": c.Query("q")})
		return nil
	}))
	cases := []struct {
		target string
		status int
		want   []string
	}{
		{"/things/abc?q=x&ids=a,b", 200, nil},
		{"/things/%C3%A9?q=%E2%9C%93", 200, nil},
		{"/things/a%00b", 400, []string{"id:nul_character"}},
		{"/things/%FF", 400, []string{"id:invalid_utf8"}},
		{"/things/x?ids=a,%00", 400, []string{"ids:nul_character"}},
		{"/things/x?q=ok&q=%C3", 400, []string{"q:invalid_utf8"}},
		{"/things/%00?b=%FF&a=%00", 400, []string{"id:nul_character", "a:nul_character", "b:invalid_utf8"}},
		{"/things/x?k%FF=1", 400, []string{"k\uFFFD:invalid_utf8"}},
		{"/nothing/%00", 404, nil}, // no route: the 404 says more than the text
	}
	for _, tc := range cases {
		rec := do(e, http.MethodGet, tc.target, "", "")
		if rec.Code != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.target, rec.Code, rec.Body, tc.status)
			continue
		}
		if tc.status == 200 {
			continue
		}
		b := errorBody(t, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
		if got := paths(b); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: named %v, want %v", tc.target, got, tc.want)
		}
	}
}

func TestQueryDate_400_OutsideTheSaneRange(t *testing.T) {
	e := httpx.NewEngine(httpx.Options{})
	e.GET("/x", httpx.H(func(c *gin.Context) error {
		q := httpx.NewQuery(c)
		from, _ := q.Date("from", false)
		q.Since("since")
		if err := q.Err(); err != nil {
			return err
		}
		c.JSON(http.StatusOK, gin.H{"from": from.Format(time.RFC3339)})
		return nil
	}))
	for target, want := range map[string]int{
		"/x?from=1900-01-01": 200, "/x?from=2200-12-31": 200, "/x?from=2200-12-31T23:59:59Z": 200,
		"/x?from=1899-12-31": 400, "/x?from=2201-01-01": 400, "/x?from=0001-01-01": 400, "/x?from=9999-12-31T00:00:00Z": 400,
		"/x?from=1900-01-01T00:00:00%2B01:00": 400, // 1899-12-31T23:00Z
		"/x?since=2026-01-01T00:00:00Z":       200, "/x?since=0001-01-01T00:00:00Z": 400, "/x?since=2201-01-01T00:00:00Z": 400,
	} {
		rec := do(e, http.MethodGet, target, "", "")
		if rec.Code != want {
			t.Errorf("%s: %d %s, want %d", target, rec.Code, rec.Body, want)
			continue
		}
		if want == 400 {
			b := errorBody(t, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
			if got := strings.Join(paths(b), " "); got != "from:range" && got != "since:range" {
				t.Errorf("%s: named %v", target, got)
			}
		}
	}
}

func TestCheckTexts_400_NamesFormFields(t *testing.T) {
	err := httpx.CheckTexts(map[string]string{"organisationId": "o\x00", "organisationName": "ok", "n\xff": "v"})
	ae, ok := apierr.As(err)
	if !ok || strings.Join(paths(apierr.Body{Validation: ae.Validation}), " ") != "n\uFFFD:invalid_utf8 organisationId:nul_character" {
		t.Fatalf("CheckTexts = %v", err)
	}
	if err := httpx.CheckTexts(map[string]string{"a": "Dún"}); err != nil {
		t.Fatal(err)
	}
}

// FuzzCheckJSON: the scanner never panics or loops, its verdicts agree with
// the decoder (what it passes as well-formed decodes to storable text), and
// it refuses exactly the nesting beyond the bound.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `[{"a":[1,2,{"b":"\u0000"}]}]`, "{\"a\":\"\xff\"}", `"\ud800"`, `{"a":1,"a":2}`,
		strings.Repeat("[", 40), `{"a":}`, `[,]`, `{"\u0000":1}`, `"\ud83d\ude00"`, `{"a":"\\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := httpx.CheckJSON(raw, "p")
		if err != nil {
			ae, ok := apierr.As(err)
			if !ok || (ae.Code != apierr.CodeValidation && ae.Code != apierr.CodeBadRequest) {
				t.Fatalf("CheckJSON(%q) = %v", raw, err)
			}
			for _, v := range ae.Validation {
				if !utf8.ValidString(v.Path) || strings.IndexByte(v.Path, 0) >= 0 || !strings.HasPrefix(v.Path, "p") {
					t.Fatalf("CheckJSON(%q) named %q", raw, v.Path)
				}
			}
			return
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return // malformed: the decoder's answer
		}
		if depth(v) > httpx.MaxJSONDepth {
			t.Fatalf("CheckJSON passed %d levels: %q", depth(v), raw)
		}
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				if code, _ := httpx.TextProblem(x); code != "" || strings.ContainsRune(x, utf8.RuneError) && !strings.Contains(string(raw), "\uFFFD") && !strings.Contains(strings.ToLower(string(raw)), `\ufffd`) {
					t.Fatalf("CheckJSON passed %q, which decodes to %q", raw, x)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			case map[string]any:
				for k, e := range x {
					walk(k)
					walk(e)
				}
			}
		}
		walk(v)
	})
}

func depth(v any) int {
	switch x := v.(type) {
	case []any:
		d := 0
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	case map[string]any:
		d := 0
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	}
	return 0
}

// FuzzParams: no path or query value that is not storable text reaches a
// handler, and every refusal is the error body.
func FuzzParams(f *testing.F) {
	e := httpx.NewEngine(httpx.Options{})
	e.GET("/things/:id", httpx.H(func(c *gin.Context) error {
		for _, s := range append([]string{c.Param("id")}, c.Request.URL.Query()["q"]...) {
			if code, _ := httpx.TextProblem(s); code != "" {
				panic("reached the handler: " + s)
			}
		}
		c.Status(http.StatusNoContent)
		return nil
	}))
	for _, s := range [][2]string{{"abc", "x"}, {"%00", "y"}, {"a", "%FF"}, {"%C3%A9", "%E2%9C%93"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, id, q string) {
		target := "/things/" + id + "?q=" + q
		if strings.ContainsAny(target, " #\r\n\t") || strings.ContainsAny(id, "/?") || id == "" {
			return
		}
		req, err := http.NewRequest(http.MethodGet, target, nil)
		if err != nil {
			return
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusNoContent, http.StatusNotFound, http.StatusMovedPermanently, http.StatusTemporaryRedirect:
		case http.StatusBadRequest:
			errorBody(t, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
		default:
			t.Fatalf("%s: %d %s", target, rec.Code, rec.Body)
		}
	})
}
