package place

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agritrade/api/platform/apierr"
)

func TestParsePostcode(t *testing.T) {
	cases := []struct {
		country, in string
		ok          bool
		want        Postcode
	}{
		{"", "SW1A 1AA", true, Postcode{Country: "GB", Norm: "SW1A1AA", Display: "SW1A 1AA", District: "SW1A"}},
		{"", "sw1a1aa", true, Postcode{Country: "GB", Norm: "SW1A1AA", Display: "SW1A 1AA", District: "SW1A"}},
		{"GB", " la9 4dl ", true, Postcode{Country: "GB", Norm: "LA94DL", Display: "LA9 4DL", District: "LA9"}},
		{"GB", "M1", true, Postcode{Country: "GB", Norm: "M1", Display: "M1", IsDistrict: true}},
		{"GB", "EC2R", true, Postcode{Country: "GB", Norm: "EC2R", Display: "EC2R", IsDistrict: true}},
		{"", "D6W", true, Postcode{Country: "IE", Norm: "D6W", Display: "D6W", IsDistrict: true}},
		{"IE", "d02 x285", true, Postcode{Country: "IE", Norm: "D02X285", Display: "D02 X285", District: "D02"}},
		{"GB", "D02X285", false, Postcode{}},
		{"IE", "SW1A 1AA", false, Postcode{}},
		{"", "hello", false, Postcode{}},
		{"", "", false, Postcode{}},
		{"DE", "10115", true, Postcode{Country: "DE", Norm: "10115", Display: "10115"}},
	}
	for _, c := range cases {
		got, ok := ParsePostcode(c.country, c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("ParsePostcode(%q, %q) = %+v, %v; want %+v, %v", c.country, c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestLooksLikePostcode(t *testing.T) {
	for in, want := range map[string]bool{
		"SW1A 1AA": true, "sw1a1aa": true, "SW1A": true, "SW1": true, "M1": true, "LA2": true, "D02": true,
		"D02 X285": true, "T12": true, "york": false, "Kendal": false, "SW": false, "St Albans": false, "B1-2": false,
	} {
		if got := LooksLikePostcode(in); got != want {
			t.Errorf("LooksLikePostcode(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"Dún Laoghaire":           "dun laoghaire",
		"  King's   Lynn ":        "king s lynn",
		"Stoke-on-Trent":          "stoke on trent",
		"ST. ALBANS":              "st albans",
		"Bishop's Stortford (UK)": "bishop s stortford uk",
		"!!!":                     "",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWithinOneEdit(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"york", "york", true},
		{"yrok", "york", true},      // transposition
		{"kendl", "kendal", true},   // deletion
		{"kendall", "kendal", true}, // insertion
		{"kwndal", "kendal", true},  // substitution
		{"kwndl", "kendal", false},
		{"abc", "cba", false},
		{"ab", "abcd", false},
		{"dún", "dun", true},
	} {
		if got := WithinOneEdit(c.a, c.b); got != c.want {
			t.Errorf("WithinOneEdit(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if !PrefixWithinOneEdit("cirencst", "cirencester") || PrefixWithinOneEdit("xyzenc", "cirencester") {
		t.Fatal("PrefixWithinOneEdit")
	}
}

func TestOneEditVariants(t *testing.T) {
	vs := OneEditVariants("yrok")
	found := false
	for _, v := range vs {
		if !WithinOneEdit("yrok", v) {
			t.Fatalf("variant %q is not one edit away", v)
		}
		found = found || v == "york"
	}
	if !found {
		t.Fatal("york is not among the variants of yrok")
	}
}

func TestParseThreeWords(t *testing.T) {
	for in, want := range map[string]string{
		"apple.meadow.tractor":    "apple.meadow.tractor",
		"///Apple.Meadow.Tractor": "apple.meadow.tractor",
		" apple。meadow。tractor ":  "apple.meadow.tractor",
		"école.prairie.tracteur":  "école.prairie.tracteur",
	} {
		got, err := ParseThreeWords(in)
		if err != nil || string(got) != want {
			t.Errorf("ParseThreeWords(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "apple.meadow", "apple..tractor", "apple.meadow.tractor.x", "a1.b.c", "apple meadow tractor", strings.Repeat("a", 300) + ".b.c"} {
		_, err := ParseThreeWords(in)
		if e, ok := apierr.As(err); !ok || e.Code != apierr.CodeValidation || e.Validation[0].Path != "query" {
			t.Errorf("ParseThreeWords(%q): %v, want a validation error on query", in, err)
		}
	}
}

func TestDistanceAndBox(t *testing.T) {
	london, paris := Coordinates{Lat: 51.5072, Lon: -0.1276}, Coordinates{Lat: 48.8566, Lon: 2.3522}
	if d := DistanceKm(london, paris); d < 340 || d > 346 {
		t.Fatalf("London-Paris %.1f km, want about 343", d)
	}
	b := BoxAround(london, 25)
	for _, bearing := range []Coordinates{{Lat: 0.2245, Lon: 0}, {Lat: -0.2245, Lon: 0}, {Lat: 0, Lon: 0.36}, {Lat: 0, Lon: -0.36}} {
		p := Coordinates{Lat: london.Lat + bearing.Lat, Lon: london.Lon + bearing.Lon}
		inside := p.Lat >= b.MinLat && p.Lat <= b.MaxLat && p.Lon >= b.MinLon && p.Lon <= b.MaxLon
		if DistanceKm(london, p) <= 25 && !inside {
			t.Fatalf("%+v is %.2f km away but outside the box %+v", p, DistanceKm(london, p), b)
		}
	}
	if polar := BoxAround(Coordinates{Lat: 89.99, Lon: 10}, 25); polar.MinLon != -180 || polar.MaxLon != 180 || polar.MaxLat != 90 {
		t.Fatalf("box at the pole %+v, want every longitude", polar)
	}
}

func TestNewSearchQuery(t *testing.T) {
	q, err := NewSearchQuery(" york ", "", "gb", 20, 0)
	if err != nil || q.Text != "york" || q.Country != "GB" {
		t.Fatalf("%+v %v", q, err)
	}
	if _, err := NewSearchQuery("", "pc:GB:SW1A", "", 100, 5); err != nil {
		t.Fatalf("container only: %v", err)
	}
	_, err = NewSearchQuery("y", "", "G1", 101, 100001)
	e, _ := apierr.As(err)
	var got []string
	for _, f := range e.Validation {
		got = append(got, f.Path)
	}
	if strings.Join(got, ",") != "query,countryISO,limit,offset" {
		t.Fatalf("paths %v", got)
	}
}

func TestCountryName(t *testing.T) {
	for code, want := range map[string]string{"GB": "United Kingdom", "IE": "Ireland", "FR": "France", "ZZ": "ZZ"} {
		if got := CountryName(code); got != want {
			t.Errorf("CountryName(%s) = %q, want %q", code, got, want)
		}
	}
}

// damerau is a reference restricted Damerau-Levenshtein distance, the oracle
// of the fuzz test of WithinOneEdit.
func damerau(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

func FuzzWithinOneEdit(f *testing.F) {
	for _, s := range [][2]string{{"york", "yrok"}, {"kendal", "kendl"}, {"", "a"}, {"abc", "acb"}, {"ab", "ba"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) || len(a) > 64 || len(b) > 64 {
			return
		}
		want := damerau(a, b) <= 1
		if got := WithinOneEdit(a, b); got != want {
			t.Fatalf("WithinOneEdit(%q, %q) = %v, distance %d", a, b, got, damerau(a, b))
		}
		if WithinOneEdit(a, b) != WithinOneEdit(b, a) {
			t.Fatalf("not symmetric for %q, %q", a, b)
		}
	})
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"Dún Laoghaire", "King's Lynn", "", "  ", "ÅÄÖ-åäö", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := Normalize(s)
		if Normalize(n) != n {
			t.Fatalf("Normalize is not idempotent on %q: %q then %q", s, n, Normalize(n))
		}
		if strings.ContainsAny(n, "%_*?[]'\"\\") || strings.HasPrefix(n, " ") || strings.HasSuffix(n, " ") || strings.Contains(n, "  ") {
			t.Fatalf("Normalize(%q) = %q holds wildcards or loose spaces", s, n)
		}
	})
}

func FuzzParsePostcode(f *testing.F) {
	for _, s := range []string{"SW1A 1AA", "sw1a1aa", "D02X285", "M1", "", "12345", "GIR 0AA"} {
		f.Add("", s)
		f.Add("GB", s)
		f.Add("IE", s)
	}
	f.Fuzz(func(t *testing.T, country, s string) {
		pc, ok := ParsePostcode(country, s)
		if !ok {
			return
		}
		if pc.Norm == "" || pc.Norm != PostcodeNorm(pc.Norm) || PostcodeNorm(pc.Display) != pc.Norm {
			t.Fatalf("ParsePostcode(%q, %q) = %+v: display and norm disagree", country, s, pc)
		}
		if pc.District != "" && (!strings.HasPrefix(pc.Norm, pc.District) || pc.IsDistrict) {
			t.Fatalf("ParsePostcode(%q, %q) = %+v: bad district", country, s, pc)
		}
		if again, ok := ParsePostcode(country, pc.Display); !ok || again != pc {
			t.Fatalf("the display form %q does not parse back to %+v (%+v)", pc.Display, pc, again)
		}
	})
}

func FuzzParseThreeWords(f *testing.F) {
	for _, s := range []string{"apple.meadow.tractor", "///a.b.c", "a.b", "", "。。", "école.prairie.tracteur"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseThreeWords(s)
		if err != nil {
			if !apierr.IsCode(err, apierr.CodeValidation) {
				t.Fatalf("ParseThreeWords(%q): %v, want a validation error", s, err)
			}
			return
		}
		if strings.Count(string(w), ".") != 2 || string(w) != strings.ToLower(string(w)) {
			t.Fatalf("ParseThreeWords(%q) = %q", s, w)
		}
		if again, err := ParseThreeWords(string(w)); err != nil || again != w {
			t.Fatalf("%q does not parse back: %q %v", w, again, err)
		}
	})
}
