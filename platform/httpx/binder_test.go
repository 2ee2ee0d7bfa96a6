package httpx_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
)

type money struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

type fileRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type Embedded struct {
	Note string `json:"note"`
}

// order exercises every shape the binder walks: nested structs, pointers,
// slices of structs and of pointers, maps, Nullable, a text type (time) and
// a type with its own decoding (json.RawMessage), an embedded struct.
type order struct {
	Embedded
	Reference string                    `json:"reference"`
	Quantity  int                       `json:"quantity"`
	Small     int8                      `json:"small"`
	Count     uint                      `json:"count"`
	Paid      *bool                     `json:"paid"`
	Price     *struct{ PerUnit money }  `json:"price"`
	Cost      struct{ Min, Max *money } `json:"cost"`
	Files     httpx.Nullable[[]fileRef] `json:"files"`
	Weight    httpx.Nullable[float64]   `json:"weight"`
	Tags      []string                  `json:"tags"`
	Extra     map[string]int            `json:"extra"`
	When      *time.Time                `json:"when"`
	Raw       json.RawMessage           `json:"raw"`
	Any       any                       `json:"any"`
	Items     []*fileRef                `json:"items"`
	Ignored   string                    `json:"-"`
}

// Validate makes reference required: its failures join the binder's when
// the binder found some.
func (o *order) Validate(f *apierr.Fields) {
	f.Required("reference", o.Reference)
	if o.Quantity < 0 {
		f.Add("quantity", "range", "must not be negative", nil)
	}
}

func TestDecode_Table(t *testing.T) {
	type entry struct{ path, code string }
	cases := []struct {
		name string
		body string
		want []entry
		// check looks at what was bound (only when want is empty, or to
		// see that the good fields of a failing body were kept).
		check func(t *testing.T, o *order)
	}{
		{name: "200_everything", body: `{"reference":"R1","note":"n","quantity":3,"small":-5,"count":1e3,"paid":true,
			"price":{"PerUnit":{"amount":1.5,"currency":"GBP"}},"cost":{"Min":null,"Max":{"amount":2,"currency":"EUR"}},
			"files":[{"id":"f1","name":"a.txt"}],"weight":null,"tags":["a","b"],"extra":{"x":1},"when":"2026-11-21T15:04:05Z",
			"raw":{"any":[1,"x"]},"any":{"n":1},"items":[{"id":"i1"},null]}`,
			check: func(t *testing.T, o *order) {
				if o.Reference != "R1" || o.Note != "n" || o.Quantity != 3 || o.Small != -5 || o.Count != 1000 || o.Paid == nil || !*o.Paid ||
					o.Price == nil || o.Price.PerUnit.Amount != 1.5 || o.Cost.Min != nil || o.Cost.Max.Currency != "EUR" ||
					!o.Files.Set || len(*o.Files.Value) != 1 || (*o.Files.Value)[0].Name != "a.txt" || !o.Weight.Null() ||
					len(o.Tags) != 2 || o.Extra["x"] != 1 || o.When == nil || o.When.Year() != 2026 ||
					string(o.Raw) != `{"any":[1,"x"]}` || o.Any.(map[string]any)["n"] != 1.0 || len(o.Items) != 2 || o.Items[1] != nil {
					t.Fatalf("bound %+v", o)
				}
			}},
		{name: "200_absentVersusNull", body: `{"reference":"R","files":null}`,
			check: func(t *testing.T, o *order) {
				if !o.Files.Set || o.Files.Value != nil || !o.Files.Null() || o.Weight.Set || o.Weight.Value != nil {
					t.Fatalf("files %+v weight %+v", o.Files, o.Weight)
				}
			}},
		{name: "200_nullLeavesZero", body: `{"reference":"R","quantity":null,"tags":null,"paid":null,"raw":null}`,
			check: func(t *testing.T, o *order) {
				if o.Quantity != 0 || o.Tags != nil || o.Paid != nil || string(o.Raw) != "null" {
					t.Fatalf("bound %+v", o)
				}
			}},
		{name: "400_everyTypeErrorAtOnce", body: `{"reference":5,"quantity":"3","paid":"yes","price":{"PerUnit":{"amount":"1","currency":7}},
			"tags":["a",2,null,{}],"files":[{"id":1},"x"],"weight":"heavy","extra":{"a":"b"},"when":5,"items":[{"id":true}],"note":[]}`,
			want: []entry{{"reference", "type"}, {"quantity", "type"}, {"paid", "type"}, {"price.PerUnit.amount", "type"},
				{"price.PerUnit.currency", "type"}, {"tags[1]", "type"}, {"tags[3]", "type"}, {"files[0].id", "type"}, {"files[1]", "type"},
				{"weight", "type"}, {"extra.a", "type"}, {"when", "type"}, {"items[0].id", "type"}, {"note", "type"}}},
		{name: "400_numbersThatDoNotFit", body: `{"reference":"R","quantity":1.5,"small":300,"count":-1,"price":{"PerUnit":{"amount":1e999}},"any":[1e999]}`,
			want: []entry{{"quantity", "type"}, {"small", "range"}, {"count", "range"}, {"price.PerUnit.amount", "range"}, {"any", "range"}}},
		{name: "400_unknownFieldsAtEveryLevel", body: `{"reference":"R","Reference":"x","price":{"PerUnit":{"amount":1,"curency":"GBP"},"extra":1},
			"files":[{"id":"f","size":3}],"items":[{"id":"i","url":"u"}],"Ignored":"x","hidden":"y","cost":{"min":null}}`,
			want: []entry{{"Reference", "unknown_field"}, {"price.PerUnit.curency", "unknown_field"}, {"price.extra", "unknown_field"},
				{"files[0].size", "unknown_field"}, {"items[0].url", "unknown_field"}, {"Ignored", "unknown_field"}, {"hidden", "unknown_field"},
				{"cost.min", "unknown_field"}}},
		{name: "400_typeAndValidationTogether", body: `{"quantity":-1,"paid":1}`,
			want: []entry{{"paid", "type"}, {"reference", "required"}, {"quantity", "range"}}},
		{name: "200_validateIsTheFeaturesWhenTypesAreClean", body: `{"quantity":-1}`,
			check: func(t *testing.T, o *order) {
				if o.Quantity != -1 {
					t.Fatalf("bound %+v", o)
				}
			}},
		{name: "400_aFieldOfTheWrongTypeIsNotAlsoRequired", body: `{"reference":["R"]}`,
			want: []entry{{"reference", "type"}}},
		{name: "400_notAnObject", body: `[1]`, want: []entry{{"", "type"}}},
		{name: "400_null", body: `null`, want: []entry{{"", "type"}}},
		{name: "400_badTime", body: `{"reference":"R","when":"yesterday"}`, want: []entry{{"when", "format"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var o order
			f, err := httpx.Decode([]byte(tc.body), &o)
			if err != nil {
				t.Fatalf("error %v", err)
			}
			var got []entry
			for _, fe := range f.List() {
				got = append(got, entry{fe.Path, fe.Code})
				if fe.Message == "" {
					t.Errorf("%s: no message", fe.Path)
				}
				if fe.Code == httpx.CodeType && (fe.Data["expected"] == nil || fe.Data["actual"] == nil) {
					t.Errorf("%s: type without expected/actual: %v", fe.Path, fe.Data)
				}
			}
			sortEntries := func(es []entry) {
				slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.path+" "+a.code, b.path+" "+b.code) })
			}
			sortEntries(got)
			want := slices.Clone(tc.want)
			sortEntries(want)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("failures\n got %v\nwant %v", got, want)
			}
			if tc.check != nil {
				tc.check(t, &o)
			}
		})
	}
}

func TestDecode_400_UnknownFieldNamesTheAllowedOnesAndTheCaseSlip(t *testing.T) {
	var o order
	f, _ := httpx.Decode([]byte(`{"reference":"R","Quantity":1}`), &o)
	l := f.List()
	if len(l) != 1 || l[0].Path != "Quantity" || !strings.Contains(l[0].Message, "did you mean quantity") ||
		!slices.Contains(l[0].Data["allowed"].([]string), "quantity") {
		t.Fatalf("%+v", l)
	}
}

func TestDecode_400_ManyFailuresAreCapped(t *testing.T) {
	body := "[" + strings.TrimSuffix(strings.Repeat(`{"reference":1},`, 1000), ",") + "]"
	_, _, err := httpx.DecodeOneOrMany[order]([]byte(body), 1000)
	ae, ok := apierr.As(err)
	if !ok || len(ae.Validation) != 100 || ae.Validation[99].Path != "[99].reference" {
		t.Fatalf("%d entries: %v", len(ae.Validation), err)
	}
}

func TestDecodeOneOrMany_Table(t *testing.T) {
	cases := []struct {
		name  string
		body  string
		list  bool
		n     int
		paths []string
	}{
		{"200_one", `{"reference":"a"}`, false, 1, nil},
		{"200_many", `[{"reference":"a"},{"reference":"b"}]`, true, 2, nil},
		{"400_itemsNamedByIndex", `[{"reference":1},{"reference":"ok"},{"weight":"x","reference":"r","bogus":1},{}]`, true, 4,
			[]string{"[0].reference", "[2].bogus", "[2].weight", "[3].reference"}},
		{"400_oneItemHasNoPrefix", `{"reference":"r","bogus":1}`, false, 1, []string{"bogus"}},
		{"400_overMax", `[{},{},{}]`, true, 0, []string{""}},
		{"400_empty", `[]`, true, 0, []string{""}},
		{"400_itemNotAnObject", `[{"reference":"a"},7]`, true, 2, []string{"[1]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			items, isList, err := httpx.DecodeOneOrMany[order]([]byte(tc.body), max(2, tc.n))
			if isList != tc.list {
				t.Fatalf("isList %v", isList)
			}
			if tc.paths == nil {
				if err != nil || len(items) != tc.n {
					t.Fatalf("%d items, %v", len(items), err)
				}
				return
			}
			ae, ok := apierr.As(err)
			if !ok || ae.Code != apierr.CodeValidation {
				t.Fatalf("%v", err)
			}
			var got []string
			for _, fe := range ae.Validation {
				got = append(got, fe.Path)
			}
			slices.Sort(got)
			if strings.Join(got, "|") != strings.Join(tc.paths, "|") {
				t.Fatalf("paths %v, want %v", got, tc.paths)
			}
		})
	}
}

func TestBindJSON_400_UnknownFieldThroughTheEngine(t *testing.T) {
	e := engine(func(c *gin.Context) error {
		var in item
		if err := httpx.BindJSON(c, &in); err != nil {
			return err
		}
		c.JSON(http.StatusOK, in)
		return nil
	})
	rec := do(e, http.MethodPost, "/x", "application/json", `{"referenceNo":"R1"}`)
	b := errorBody(t, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	if rec.Code != 400 || b.Code != apierr.CodeValidation || len(b.Validation) != 1 || b.Validation[0].Path != "referenceNo" ||
		b.Validation[0].Code != httpx.CodeUnknownField {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// FuzzBind feeds arbitrary bodies to the binder (one or many): no panic,
// failures only as typed 400s whose entries all carry a code and a message,
// and what it accepts, rendered by encoding/json, it accepts again.
func FuzzBind(f *testing.F) {
	for _, s := range []string{`{"reference":"R1","quantity":2,"files":[{"id":"f"}],"weight":null}`,
		`[{"reference":"a"},{"reference":"b","price":{"PerUnit":{"amount":1}}}]`, `{"reference":1,"bogus":{}}`,
		`{"when":"2026-01-01T00:00:00Z","extra":{"a":1},"any":[1,{"b":null}],"raw":[1]}`, `null`, `[]`, `[`, `{"small":1e2}`,
		`{"count":-0,"quantity":9223372036854775808}`, `{"tags":["\u0000"]}`, `{"note":"x","Embedded":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		items, _, err := httpx.DecodeOneOrMany[order](raw, 20)
		if err != nil {
			ae, ok := apierr.As(err)
			if !ok || ae.Status() != http.StatusBadRequest {
				t.Fatalf("error %v is not a 400", err)
			}
			for _, fe := range ae.Validation {
				if fe.Code == "" || fe.Message == "" {
					t.Fatalf("entry without code or message: %+v", fe)
				}
			}
			return
		}
		if len(items) == 0 || len(items) > 20 {
			t.Fatalf("%d items accepted", len(items))
		}
		// What it accepts, rendered by encoding/json, it accepts again.
		for _, it := range items {
			out, err := json.Marshal(it)
			if err != nil {
				t.Fatalf("render %+v: %v", it, err)
			}
			var again order
			if f, err := httpx.Decode(out, &again); err != nil || !f.Empty() {
				t.Fatalf("%s accepted, its rendering %s refused: %v %v", raw, out, err, f.List())
			}
		}
	})
}
