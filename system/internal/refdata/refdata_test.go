package refdata_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// kind names the JSON type of a decoded value; whole numbers are "integer".
func kind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// shape checks an object against the seed's table of its fields: every field
// present with its JSON type (integer accepted where number is), nothing else.
func shape(t *testing.T, path string, v any, fields map[string]string) map[string]any {
	t.Helper()
	obj, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s is %s, want object", path, kind(v))
	}
	for name, want := range fields {
		got, present := obj[name]
		if !present {
			t.Errorf("%s.%s missing", path, name)
			continue
		}
		k := kind(got)
		if k != want && (want != "number" || k != "integer") {
			t.Errorf("%s.%s is %s (%v), want %s", path, name, k, got, want)
		}
	}
	for name := range obj {
		if _, ok := fields[name]; !ok {
			t.Errorf("%s.%s is not a field of the seed", path, name)
		}
	}
	return obj
}

func array(t *testing.T, path string, v any) []any {
	t.Helper()
	a, ok := v.([]any)
	if !ok {
		t.Fatalf("%s is %s, want array", path, kind(v))
	}
	return a
}

var weightFields = map[string]string{"name": "string", "conversion": "number"}

var unitFields = map[string]string{"distance": "string", "weight": "string", "capacity": "string", "temperature": "string"}

func countryFields(enabled string, settings bool) map[string]string {
	f := map[string]string{"iso": "string", "name": "string", "enabled": enabled, "units": "object", "iso3": "string",
		"currency": "string", "callingCode": "string", "zoneDescriptor": "string", "locale": "string", "continent": "string"}
	if settings {
		f["defaultWeight"] = "object"
	}
	return f
}

func checkCommodity(t *testing.T, path string, v any) {
	c := shape(t, path, v, map[string]string{"id": "string", "countryISO": "string", "items": "array", "type": "string", "defaultWeight": "object", "weighbridgeWeight": "object"})
	shape(t, path+".defaultWeight", c["defaultWeight"], weightFields)
	shape(t, path+".weighbridgeWeight", c["weighbridgeWeight"], weightFields)
	for i, it := range array(t, path+".items", c["items"]) {
		ip := fmt.Sprintf("%s.items[%d]", path, i)
		item := shape(t, ip, it, map[string]string{"id": "integer", "name": "string", "types": "array", "tags": "array", "weight": "object"})
		shape(t, ip+".weight", item["weight"], weightFields)
		for j, tag := range array(t, ip+".tags", item["tags"]) {
			shape(t, fmt.Sprintf("%s.tags[%d]", ip, j), tag, map[string]string{"id": "integer", "name": "string"})
		}
		for j, ty := range array(t, ip+".types", item["types"]) {
			tp := fmt.Sprintf("%s.types[%d]", ip, j)
			typ := shape(t, tp, ty, map[string]string{"id": "integer", "name": "string", "grades": "array"})
			for k, gr := range array(t, tp+".grades", typ["grades"]) {
				gp := fmt.Sprintf("%s.grades[%d]", tp, k)
				g := shape(t, gp, gr, map[string]string{"id": "integer", "name": "string", "varieties": "array"})
				for l, v := range array(t, gp+".varieties", g["varieties"]) {
					if kind(v) != "string" {
						t.Errorf("%s.varieties[%d] is %s", gp, l, kind(v))
					}
				}
			}
		}
	}
}

func TestSettingsDocumentMatchesTheSeed(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, _ := newServer(t, db)
		token := s.Token(testkit.Farmer)
		r := s.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/settings", Token: token})
		if r.Status != http.StatusOK {
			t.Fatalf("status %d %s", r.Status, r.Body)
		}
		var doc any
		r.Decode(t, &doc)
		d := shape(t, "settings", doc, map[string]string{"commodities": "array", "sellerCommodities": "array", "trading": "object",
			"conversions": "object", "countries": "object", "regions": "array", "regionGroups": "array"})
		commodities := array(t, "commodities", d["commodities"])
		if len(commodities) != 2 {
			t.Fatalf("%d commodity groups, want GB and IE", len(commodities))
		}
		for i, c := range commodities {
			checkCommodity(t, fmt.Sprintf("commodities[%d]", i), c)
		}
		for i, sc := range array(t, "sellerCommodities", d["sellerCommodities"]) {
			shape(t, fmt.Sprintf("sellerCommodities[%d]", i), sc, map[string]string{"id": "string", "name": "string"})
		}
		tr := shape(t, "trading", d["trading"], map[string]string{"settlementDeductionReasons": "array", "settlementBonusReasons": "array",
			"exFarmPriceCommodities": "array", "closeListingReasons": "array", "seamlessTrading": "object"})
		for _, k := range []string{"settlementDeductionReasons", "settlementBonusReasons", "closeListingReasons"} {
			list := array(t, k, tr[k])
			if len(list) == 0 {
				t.Errorf("trading.%s is empty", k)
			}
			for i, reason := range list {
				shape(t, fmt.Sprintf("trading.%s[%d]", k, i), reason, map[string]string{"id": "integer", "description": "string"})
			}
		}
		for i, e := range array(t, "exFarmPriceCommodities", tr["exFarmPriceCommodities"]) {
			ex := shape(t, fmt.Sprintf("trading.exFarmPriceCommodities[%d]", i), e, map[string]string{"id": "integer", "name": "string", "commodityId": "integer", "grades": "array", "default": "boolean"})
			for _, g := range array(t, "grades", ex["grades"]) {
				if kind(g) != "integer" {
					t.Errorf("ex-farm grade %v is %s", g, kind(g))
				}
			}
		}
		shape(t, "trading.seamlessTrading", tr["seamlessTrading"], map[string]string{"openPeriodMinutes": "integer", "reviewPeriodMinutes": "integer", "bidExpiryMinutes": "integer"})
		conv := d["conversions"].(map[string]any)
		for k, v := range conv {
			if kind(v) != "number" && kind(v) != "integer" {
				t.Errorf("conversions.%s is %s", k, kind(v))
			}
		}
		if conv["tonne_kg"] != 1000.0 || conv["lb_kg"] != 0.45359237 {
			t.Errorf("conversions tonne_kg %v lb_kg %v", conv["tonne_kg"], conv["lb_kg"])
		}
		countries := d["countries"].(map[string]any)
		for _, iso := range []string{"GB", "IE", "FR", "DE", "NL", "BE", "ES", "PL", "US", "AU", "NZ"} {
			c := shape(t, "countries."+iso, countries[iso], countryFields("boolean", true))
			shape(t, "countries."+iso+".units", c["units"], unitFields)
			shape(t, "countries."+iso+".defaultWeight", c["defaultWeight"], weightFields)
			if c["iso"] != iso || c["enabled"] != (iso == "GB" || iso == "IE") {
				t.Errorf("country %s: iso %v enabled %v", iso, c["iso"], c["enabled"])
			}
		}
		gb := countries["GB"].(map[string]any)
		if gb["iso3"] != "GBR" || gb["currency"] != "GBP" || gb["callingCode"] != "+44" || gb["locale"] != "en-GB" {
			t.Errorf("GB: %v", gb)
		}
		if ie := countries["IE"].(map[string]any); ie["iso3"] != "IRL" || ie["currency"] != "EUR" || ie["callingCode"] != "+353" {
			t.Errorf("IE: %v", ie)
		}
		regions := array(t, "regions", d["regions"])
		if len(regions) != 243 {
			t.Errorf("%d regions, want 217 in the UK and 26 in Ireland", len(regions))
		}
		for i, reg := range regions {
			shape(t, fmt.Sprintf("regions[%d]", i), reg, map[string]string{"iso": "string", "name": "string", "group": "string", "country": "string"})
		}
		groups := array(t, "regionGroups", d["regionGroups"])
		for i, g := range groups {
			shape(t, fmt.Sprintf("regionGroups[%d]", i), g, map[string]string{"group": "string", "regions": "string"})
		}
		var southWest string
		for _, g := range groups {
			if g.(map[string]any)["group"] == "South West" {
				southWest = g.(map[string]any)["regions"].(string)
			}
		}
		if !slices.Contains(strings.Split(southWest, ","), "GB-CON") {
			t.Errorf("South West region group %q lacks Cornwall", southWest)
		}
	})
}

func TestCountrySettings(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, _ := newServer(t, db)
		token := s.Token(testkit.Farmer)
		var doc struct {
			Commodities []struct{ CountryISO string } `json:"commodities"`
			Countries   map[string]json.RawMessage    `json:"countries"`
			Regions     []struct{ Country string }    `json:"regions"`
			Trading     struct {
				ExFarm []struct{ CommodityID int } `json:"exFarmPriceCommodities"`
				Close  []any                       `json:"closeListingReasons"`
			} `json:"trading"`
			RegionGroups []struct{ Group string } `json:"regionGroups"`
		}
		s.Run(t, []testkit.Scenario{
			{Name: "get200IE", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/settings/ie", Token: token}, Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					r.Decode(t, &doc)
					if len(doc.Countries) != 1 || doc.Countries["IE"] == nil || len(doc.Commodities) != 1 || doc.Commodities[0].CountryISO != "IE" {
						t.Fatalf("not restricted to IE: %d countries, %d commodity groups", len(doc.Countries), len(doc.Commodities))
					}
					if len(doc.Regions) != 26 || len(doc.RegionGroups) != 4 {
						t.Fatalf("%d regions in %d groups, want 26 counties in 4 provinces", len(doc.Regions), len(doc.RegionGroups))
					}
					for _, e := range doc.Trading.ExFarm {
						if e.CommodityID < 100 {
							t.Fatalf("ex-farm commodity %d is not Irish", e.CommodityID)
						}
					}
					if len(doc.Trading.ExFarm) == 0 || len(doc.Trading.Close) == 0 {
						t.Fatal("trading lists missing")
					}
				}},
			{Name: "get404disabled", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/settings/FR", Token: token}, Status: http.StatusNotFound, Code: "not_found"},
			{Name: "get404unknown", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/settings/XX", Token: token}, Status: http.StatusNotFound, Code: "not_found"},
			{Name: "get404unknownAgainFromCache", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/settings/XX", Token: token}, Status: http.StatusNotFound, Code: "not_found"},
			{Name: "get404malformed", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/settings/GBR", Token: token}, Status: http.StatusNotFound, Code: "not_found"},
			{Name: "get401", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/settings/GB"}, Status: http.StatusUnauthorized, Code: string(apierr.CodeUnauthorized)},
			{Name: "get401all", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/settings"}, Status: http.StatusUnauthorized, Code: string(apierr.CodeUnauthorized)},
		})
	})
}

func TestCountryList(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, _ := newServer(t, db)
		s.Run(t, []testkit.Scenario{
			{Name: "get200public", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/countries"}, Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					var m map[string]any
					r.Decode(t, &m)
					if len(m) != 11 {
						t.Fatalf("%d countries, want 11", len(m))
					}
					for iso, c := range m {
						obj := shape(t, "countries."+iso, c, countryFields("string", false))
						shape(t, "countries."+iso+".units", obj["units"], unitFields)
						want := "false"
						if iso == "GB" || iso == "IE" {
							want = "true"
						}
						if obj["enabled"] != want {
							t.Errorf("%s enabled %q, want %q", iso, obj["enabled"], want)
						}
					}
					us := m["US"].(map[string]any)
					if us["iso3"] != "USA" || us["currency"] != "USD" || us["callingCode"] != "+1" || us["units"].(map[string]any)["temperature"] != "fahrenheit" {
						t.Errorf("US: %v", us)
					}
					if r.Header.Get("Cache-Control") != "public, max-age=300" || r.Header.Get("ETag") == "" {
						t.Errorf("headers %v", r.Header)
					}
				}},
			{Name: "get401badToken", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/countries", Token: "not-a-token"}, Status: http.StatusUnauthorized, Code: string(apierr.CodeUnauthorized)},
		})
	})
}

func TestRegions(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, _ := newServer(t, db)
		type region struct {
			ISO, Name, Country, Group, UKGroup string
			TB                                 int
			Aliases                            []string
		}
		var list struct {
			ID      string   `json:"id"`
			Regions []region `json:"regions"`
		}
		find := func(iso string) region {
			for _, r := range list.Regions {
				if r.ISO == iso {
					return r
				}
			}
			t.Fatalf("%s not listed", iso)
			return region{}
		}
		s.Run(t, []testkit.Scenario{
			{Name: "get200GB", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/regions?countryISO=gb"}, Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					var raw struct{ Regions []any }
					r.Decode(t, &raw)
					for i, reg := range raw.Regions {
						obj := shape(t, fmt.Sprintf("regions[%d]", i), reg, map[string]string{"iso": "string", "name": "string", "tb": "integer",
							"country": "string", "group": "string", "ukGroup": "string", "aliases": "array"})
						for _, a := range obj["aliases"].([]any) {
							if kind(a) != "string" {
								t.Errorf("alias %v", a)
							}
						}
					}
					r.Decode(t, &list)
					if list.ID != "GB" || len(list.Regions) != 217 {
						t.Fatalf("id %q, %d regions", list.ID, len(list.Regions))
					}
					count := map[string]int{}
					for _, reg := range list.Regions {
						count[reg.UKGroup]++
					}
					if count["Scotland"] != 32 || count["Wales"] != 22 || count["Northern Ireland"] != 11 || count["England"] < 150 {
						t.Fatalf("by nation %v: want 32 Scottish council areas, 22 Welsh principal areas, 11 NI districts", count)
					}
					// Real-world spot checks.
					if ny := find("GB-NYK"); ny.Name != "North Yorkshire" || ny.UKGroup != "England" || ny.Group != "Yorkshire and The Humber" || ny.TB != 48 {
						t.Errorf("GB-NYK %+v", ny)
					}
					if k := find("GB-KEN"); k.Name != "Kent" || k.TB != 48 {
						t.Errorf("GB-KEN %+v", k)
					}
					if c := find("GB-CON"); c.Name != "Cornwall" || c.TB != 12 {
						t.Errorf("Cornwall, in the High Risk Area, is tested every 12 months: %+v", c)
					}
					if c := find("GB-CHE"); c.TB != 6 {
						t.Errorf("Cheshire East, in the Edge Area, is tested six-monthly: %+v", c)
					}
					if h := find("GB-HLD"); h.UKGroup != "Scotland" || h.TB != 48 {
						t.Errorf("GB-HLD %+v", h)
					}
					if p := find("GB-PEM"); p.UKGroup != "Wales" || !slices.Contains(p.Aliases, "Sir Benfro") {
						t.Errorf("GB-PEM %+v", p)
					}
					if b := find("GB-BFS"); b.UKGroup != "Northern Ireland" || b.TB != 12 {
						t.Errorf("GB-BFS %+v", b)
					}
				}},
			{Name: "get200IE", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/regions?countryISO=IE"}, Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					r.Decode(t, &list)
					if len(list.Regions) != 26 {
						t.Fatalf("%d Irish counties", len(list.Regions))
					}
					if c := find("IE-CO"); c.Name != "Cork" || c.Group != "Munster" || c.UKGroup != "" || !slices.Contains(c.Aliases, "Corcaigh") {
						t.Errorf("IE-CO %+v", c)
					}
				}},
			{Name: "get200all", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/regions"}, Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					r.Decode(t, &list)
					if list.ID != "all" || len(list.Regions) != 243 {
						t.Fatalf("id %q, %d regions", list.ID, len(list.Regions))
					}
				}},
			{Name: "get200knownCountryWithoutRegions", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/regions?countryISO=FR"}, Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					r.Decode(t, &list)
					if list.ID != "FR" || len(list.Regions) != 0 {
						t.Fatalf("%+v", list)
					}
				}},
			{Name: "get404unknownCountry", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/regions?countryISO=XX"}, Status: http.StatusNotFound, Code: "not_found"},
			{Name: "get400malformedCountry", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/regions?countryISO=GBR"}, Status: http.StatusBadRequest, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					if p := r.Error(t).Paths(); len(p) != 1 || p[0] != "countryISO" {
						t.Fatalf("paths %v", p)
					}
				}},
		})
	})
}

func TestCommodities(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, _ := newServer(t, db)
		s.Run(t, []testkit.Scenario{
			{Name: "get200GB", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/commodities?countryISO=GB"}, Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					var raw []any
					r.Decode(t, &raw)
					if len(raw) != 1 || r.Header.Get("X-Total-Count") != "1" {
						t.Fatalf("%d groups, X-Total-Count %q", len(raw), r.Header.Get("X-Total-Count"))
					}
					checkCommodity(t, "commodities[0]", raw[0])
					var groups []struct {
						CountryISO    string
						DefaultWeight struct {
							Name       string
							Conversion float64
						}
						Items []struct {
							ID    int
							Name  string
							Types []struct {
								Name   string
								Grades []struct {
									Name      string
									Varieties []string
								}
							}
						}
					}
					r.Decode(t, &groups)
					g := groups[0]
					if g.CountryISO != "GB" || g.DefaultWeight.Name != "tonne" || g.DefaultWeight.Conversion != 1000 {
						t.Fatalf("group %+v", g)
					}
					names := []string{}
					for _, it := range g.Items {
						names = append(names, it.Name)
					}
					for _, want := range []string{"Wheat", "Barley", "Oats", "Oilseed rape", "Beans", "Peas", "Maize", "Linseed"} {
						if !slices.Contains(names, want) {
							t.Errorf("no %s among %v", want, names)
						}
					}
					wheat := g.Items[0]
					if wheat.ID != 1 || wheat.Name != "Wheat" || wheat.Types[0].Name != "Milling" || wheat.Types[0].Grades[0].Name != "Group 1" {
						t.Fatalf("wheat %+v", wheat)
					}
					// Real milling wheat: Skyfall and Crusoe are nabim Group 1 varieties.
					if vs := wheat.Types[0].Grades[0].Varieties; !slices.Contains(vs, "Skyfall") || !slices.Contains(vs, "Crusoe") {
						t.Errorf("Group 1 milling wheat varieties %v", vs)
					}
					barley := g.Items[1]
					if barley.Types[0].Name != "Malting" || barley.Types[0].Grades[0].Name != "Spring" || !slices.Contains(barley.Types[0].Grades[0].Varieties, "Laureate") {
						t.Errorf("spring malting barley %+v", barley.Types[0])
					}
				}},
			{Name: "get200all", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/commodities"}, Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					if r.Header.Get("X-Total-Count") != "2" {
						t.Fatalf("X-Total-Count %q", r.Header.Get("X-Total-Count"))
					}
				}},
			{Name: "get200countryWithoutCommodities", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/commodities?countryISO=NZ"}, Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					if string(r.Body) != "[]" || r.Header.Get("X-Total-Count") != "0" {
						t.Fatalf("body %s", r.Body)
					}
				}},
			{Name: "get404unknownCountry", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/commodities?countryISO=ZZ"}, Status: http.StatusNotFound, Code: "not_found"},
			{Name: "get400malformedCountry", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/commodities?countryISO=1"}, Status: http.StatusBadRequest, Code: "validation_failed"},
		})
	})
}

func TestSpecification(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, _ := newServer(t, db)
		token := s.Token(testkit.Farmer)
		get := func(path string) testkit.Request {
			return testkit.Request{Method: http.MethodGet, Path: "/system/v1/commodities/" + path, Token: token}
		}
		type spec struct {
			Commodity struct {
				ID   int
				Name string
				Type struct {
					ID   int
					Name string
				}
				Grade struct {
					ID   int
					Name string
				}
			}
			Measures []struct {
				Specification struct {
					ID         int
					Name, Unit string
				}
				Min, Max float64
			}
		}
		measure := func(t *testing.T, sp spec, name string) (float64, float64, string) {
			for _, m := range sp.Measures {
				if m.Specification.Name == name {
					return m.Min, m.Max, m.Specification.Unit
				}
			}
			t.Fatalf("no %s measure in %+v", name, sp.Measures)
			return 0, 0, ""
		}
		expect := func(item, typ, grade string) func(t *testing.T, r *testkit.Response) spec {
			return func(t *testing.T, r *testkit.Response) spec {
				var sp spec
				r.Decode(t, &sp)
				if sp.Commodity.Name != item || sp.Commodity.Type.Name != typ || sp.Commodity.Grade.Name != grade {
					t.Fatalf("commodity %+v, want %s %s %s", sp.Commodity, item, typ, grade)
				}
				return sp
			}
		}
		s.Run(t, []testkit.Scenario{
			{Name: "get200millingGroup1", Req: get("1/specification?commodityType=Milling&commodityGrade=Group%201"), Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					sp := expect("Wheat", "Milling", "Group 1")(t, r)
					if lo, hi, u := measure(t, sp, "Moisture"); lo != 0 || hi != 15 || u != "%" {
						t.Errorf("moisture %v..%v %s", lo, hi, u)
					}
					if lo, _, u := measure(t, sp, "Specific weight"); lo != 76 || u != "kg/hl" {
						t.Errorf("specific weight min %v %s", lo, u)
					}
					if lo, _, _ := measure(t, sp, "Protein (dry matter)"); lo != 13 {
						t.Errorf("protein min %v", lo)
					}
					if lo, _, u := measure(t, sp, "Hagberg falling number"); lo != 250 || u != "s" {
						t.Errorf("Hagberg min %v %s", lo, u)
					}
					if _, hi, _ := measure(t, sp, "Admixture"); hi != 2 {
						t.Errorf("admixture max %v", hi)
					}
				}},
			{Name: "get200defaults", Req: get("1/specification"), Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) { expect("Wheat", "Milling", "Group 1")(t, r) }},
			{Name: "get200byIdsAndCase", Req: get("2/specification?commodityType=21&commodityGrade=spring"), Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					sp := expect("Barley", "Malting", "Spring")(t, r)
					if lo, _, _ := measure(t, sp, "Germination"); lo != 98 {
						t.Errorf("germination min %v", lo)
					}
					if lo, hi, _ := measure(t, sp, "Grain nitrogen (dry matter)"); lo != 1.45 || hi != 1.85 {
						t.Errorf("nitrogen %v..%v", lo, hi)
					}
				}},
			{Name: "get200gradeWithoutType", Req: get("1/specification?commodityGrade=Feed"), Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					sp := expect("Wheat", "Feed", "Feed")(t, r)
					if lo, _, _ := measure(t, sp, "Specific weight"); lo != 72 {
						t.Errorf("feed wheat specific weight %v", lo)
					}
				}},
			{Name: "get200oilseedRape", Req: get("4/specification"), Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					sp := expect("Oilseed rape", "Crushing", "Winter")(t, r)
					if lo, _, _ := measure(t, sp, "Oil content (at 9% moisture)"); lo != 40 {
						t.Errorf("oil min %v", lo)
					}
				}},
			{Name: "get404commodity", Req: get("999/specification"), Status: http.StatusNotFound, Code: "not_found"},
			{Name: "get404type", Req: get("1/specification?commodityType=Durum"), Status: http.StatusNotFound, Code: "not_found"},
			{Name: "get404grade", Req: get("1/specification?commodityType=Milling&commodityGrade=Group%209"), Status: http.StatusNotFound, Code: "not_found"},
			{Name: "get404gradeOfOtherType", Req: get("1/specification?commodityType=Feed&commodityGrade=Group%201"), Status: http.StatusNotFound, Code: "not_found"},
			{Name: "get404gradeWithoutType", Req: get("1/specification?commodityGrade=Nonesuch"), Status: http.StatusNotFound, Code: "not_found"},
			{Name: "get400id", Req: get("wheat/specification"), Status: http.StatusBadRequest, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					if p := r.Error(t).Paths(); len(p) != 1 || p[0] != "id" {
						t.Fatalf("paths %v", p)
					}
				}},
			{Name: "get401", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/commodities/1/specification"}, Status: http.StatusUnauthorized, Code: string(apierr.CodeUnauthorized)},
		})
	})
}

func TestETags(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, _ := newServer(t, db)
		token := s.Token(testkit.Farmer)
		for _, c := range []struct {
			path, cacheControl string
		}{
			{"/system/v1/settings", "private, max-age=300"},
			{"/system/v1/settings/GB", "private, max-age=300"},
			{"/system/v1/countries", "public, max-age=300"},
			{"/system/v1/regions?countryISO=GB", "public, max-age=300"},
			{"/system/v1/commodities", "public, max-age=300"},
		} {
			t.Run(c.path, func(t *testing.T) {
				first := s.Do(testkit.Request{Method: http.MethodGet, Path: c.path, Token: token})
				etag := first.Header.Get("ETag")
				if first.Status != http.StatusOK || !strings.HasPrefix(etag, `"`) || first.Header.Get("Cache-Control") != c.cacheControl {
					t.Fatalf("status %d ETag %q Cache-Control %q", first.Status, etag, first.Header.Get("Cache-Control"))
				}
				again := s.Do(testkit.Request{Method: http.MethodGet, Path: c.path, Token: token, Header: map[string]string{"If-None-Match": etag}})
				if again.Status != http.StatusNotModified || len(again.Body) != 0 || again.Header.Get("ETag") != etag {
					t.Fatalf("conditional: status %d, %d bytes, ETag %q", again.Status, len(again.Body), again.Header.Get("ETag"))
				}
				weakList := s.Do(testkit.Request{Method: http.MethodGet, Path: c.path, Token: token, Header: map[string]string{"If-None-Match": `"stale", W/` + etag}})
				if weakList.Status != http.StatusNotModified {
					t.Fatalf("a list with the weak form: status %d", weakList.Status)
				}
				other := s.Do(testkit.Request{Method: http.MethodGet, Path: c.path, Token: token, Header: map[string]string{"If-None-Match": `"stale"`}})
				if other.Status != http.StatusOK || string(other.Body) != string(first.Body) {
					t.Fatalf("another tag: status %d", other.Status)
				}
				checkGzipForm(t, s, c.path, token, first)
			})
		}
		// The tag follows the content.
		gb := s.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/settings/GB", Token: token}).Header.Get("ETag")
		ie := s.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/settings/IE", Token: token}).Header.Get("ETag")
		if gb == ie {
			t.Fatal("two documents share an ETag")
		}
	})
}

// checkGzipForm: a client that accepts gzip gets the same document
// compressed, under its own tag and Vary: Accept-Encoding; either form's tag
// answers 304 in either form; gzip;q=0 gets the plain body.
func checkGzipForm(t *testing.T, s *testkit.Server, path, token string, plain *testkit.Response) {
	t.Helper()
	etag := plain.Header.Get("ETag")
	do := func(h map[string]string) *testkit.Response {
		return s.Do(testkit.Request{Method: http.MethodGet, Path: path, Token: token, Header: h})
	}
	if len(plain.Body) < 1024 {
		if r := do(map[string]string{"Accept-Encoding": "gzip"}); r.Header.Get("Content-Encoding") != "" {
			t.Fatalf("a %d-byte body was compressed", len(plain.Body))
		}
		return
	}
	gz := do(map[string]string{"Accept-Encoding": "br, gzip"})
	gzTag := gz.Header.Get("ETag")
	if gz.Status != http.StatusOK || gz.Header.Get("Content-Encoding") != "gzip" || gzTag == etag || gzTag == "" ||
		!strings.Contains(gz.Header.Get("Vary"), "Accept-Encoding") || !strings.Contains(plain.Header.Get("Vary"), "Accept-Encoding") {
		t.Fatalf("gzip form: status %d, Content-Encoding %q, ETag %q (plain %q), Vary %q / %q", gz.Status,
			gz.Header.Get("Content-Encoding"), gzTag, etag, gz.Header.Get("Vary"), plain.Header.Get("Vary"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz.Body))
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(decoded, plain.Body) || len(gz.Body) >= len(plain.Body) {
		t.Fatalf("gzip body: %d bytes decoding to %d (plain %d), equal %v, err %v", len(gz.Body), len(decoded), len(plain.Body), bytes.Equal(decoded, plain.Body), err)
	}
	if r := do(map[string]string{"Accept-Encoding": "gzip", "If-None-Match": etag}); r.Status != http.StatusNotModified || r.Header.Get("ETag") != gzTag {
		t.Fatalf("gzip form with the plain tag: status %d ETag %q", r.Status, r.Header.Get("ETag"))
	}
	if r := do(map[string]string{"If-None-Match": gzTag}); r.Status != http.StatusNotModified || r.Header.Get("ETag") != etag {
		t.Fatalf("plain form with the gzip tag: status %d ETag %q", r.Status, r.Header.Get("ETag"))
	}
	if r := do(map[string]string{"Accept-Encoding": "gzip;q=0, identity"}); r.Header.Get("Content-Encoding") != "" || !bytes.Equal(r.Body, plain.Body) {
		t.Fatalf("gzip;q=0: Content-Encoding %q", r.Header.Get("Content-Encoding"))
	}
}

func TestLookupCommodity(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		_, mod := newServer(t, db)
		name, unit, conv, found, err := mod.LookupCommodity(context.Background(), 1)
		if err != nil || !found || name != "Wheat" || unit != "tonne" || conv != 1000 {
			t.Fatalf("1: %q %q %v %v %v", name, unit, conv, found, err)
		}
		if name, _, _, found, err := mod.LookupCommodity(context.Background(), 102); err != nil || !found || name != "Barley" {
			t.Fatalf("102: %q %v %v", name, found, err)
		}
		if _, _, _, found, err := mod.LookupCommodity(context.Background(), 999999); err != nil || found {
			t.Fatalf("unknown: %v %v", found, err)
		}
	})
}
