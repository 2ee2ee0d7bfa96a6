package locations_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/config"
	dbpkg "github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
	"github.com/agritrade/api/system/internal/locations/gazetteer"
	"github.com/agritrade/api/system/internal/locations/place"
	"github.com/uptrace/bun"
)

// newServer builds the real application with the System module. Rate limits
// are off unless configure sets them, so that long scenario tables run.
func newServer(t *testing.T, db *bun.DB, configure ...func(c *config.Config)) *testkit.Server {
	t.Helper()
	return testkit.NewServer(t, db, func(p *app.Platform) []module.Module {
		return []module.Module{system.New(p.Deps(system.Name))}
	}, testkit.Options{Configure: func(c *config.Config) {
		c.RateLimit.PerMinute = 0
		for _, f := range configure {
			f(c)
		}
	}})
}

func get(path string, params ...string) testkit.Request {
	v := url.Values{}
	for i := 0; i+1 < len(params); i += 2 {
		v.Set(params[i], params[i+1])
	}
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	return testkit.Request{Method: http.MethodGet, Path: path}
}

func results(t *testing.T, r *testkit.Response) []place.SearchResult {
	t.Helper()
	var out []place.SearchResult
	r.Decode(t, &out)
	return out
}

func location(t *testing.T, r *testkit.Response) place.Location {
	t.Helper()
	var out place.Location
	r.Decode(t, &out)
	return out
}

// first asserts the first result's text and type.
func first(text, typ string) func(t *testing.T, r *testkit.Response) {
	return func(t *testing.T, r *testkit.Response) {
		t.Helper()
		res := results(t, r)
		if len(res) == 0 {
			t.Fatalf("no results, want %s first", text)
		}
		if res[0].Text != text || res[0].Type != typ || res[0].Source != gazetteer.SourceGazetteer {
			t.Fatalf("first result %+v, want %s of type %s from the gazetteer", res[0], text, typ)
		}
		if n, _ := strconv.Atoi(r.Header.Get("X-Total-Count")); n != len(res) {
			t.Fatalf("X-Total-Count %q for %d results", r.Header.Get("X-Total-Count"), len(res))
		}
	}
}

func paths(want ...string) func(t *testing.T, r *testkit.Response) {
	return func(t *testing.T, r *testkit.Response) {
		t.Helper()
		if got := r.Error(t).Paths(); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("validation paths %v, want %v", got, want)
		}
	}
}

const search = "/system/v1/locations/search"

func TestSearch(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		s.Run(t, []testkit.Scenario{
			{Name: "200placeIsLocality", Req: get(search, "query", "kendal"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				first("Kendal", place.TypeLocality)(t, r)
				if d := results(t, r)[0].Description; d != "Cumbria, United Kingdom - 2 postcodes" {
					t.Fatalf("description %q", d)
				}
			}},
			{Name: "200prefixMostPopulousFirst", Req: get(search, "query", "Newc"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				first("Newcastle upon Tyne", place.TypeLocality)(t, r)
				var names []string
				for _, x := range results(t, r) {
					names = append(names, x.Text)
				}
				if got := strings.Join(names, ","); !strings.Contains(got, "Newcastle West") || !strings.Contains(got, "Newcastle Emlyn") {
					t.Fatalf("results %s, want every Newcastle", got)
				}
			}},
			{Name: "200countryFilter", Req: get(search, "query", "newc", "countryISO", "ie"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				res := results(t, r)
				if len(res) != 1 || res[0].Text != "Newcastle West" {
					t.Fatalf("results %+v, want Newcastle West only", res)
				}
			}},
			{Name: "200sameNameBothCountries", Req: get(search, "query", "Ashford"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				res := results(t, r)
				if len(res) != 2 || !strings.Contains(res[0].Description, "Kent") || !strings.Contains(res[1].Description, "Wicklow, Ireland") {
					t.Fatalf("results %+v, want Ashford in Kent then in Wicklow", res)
				}
			}},
			{Name: "200accentsFolded", Req: get(search, "query", "dun laoghaire"), Status: 200, Check: first("Dún Laoghaire", place.TypeLocality)},
			{Name: "200typoDeletion", Req: get(search, "query", "Manchestr"), Status: 200, Check: first("Manchester", place.TypeLocality)},
			{Name: "200typoTransposition", Req: get(search, "query", "Edinbrugh"), Status: 200, Check: first("Edinburgh", place.TypeLocality)},
			{Name: "200typoSubstitutionEarly", Req: get(search, "query", "Kwndal"), Status: 200, Check: first("Kendal", place.TypeLocality)},
			{Name: "200typoInsertion", Req: get(search, "query", "Aberystwythh"), Status: 200, Check: first("Aberystwyth", place.TypeLocality)},
			{Name: "200typoShortName", Req: get(search, "query", "Yrok"), Status: 200, Check: first("York", place.TypeLocality)},
			{Name: "200typoInPrefix", Req: get(search, "query", "Cirencst"), Status: 200, Check: first("Cirencester", place.TypeLocality)},
			{Name: "200nothing", Req: get(search, "query", "Qqqqzzzz"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				if res := results(t, r); len(res) != 0 || r.Header.Get("X-Total-Count") != "0" {
					t.Fatalf("results %+v for gibberish", res)
				}
			}},
			{Name: "200fullPostcode", Req: get(search, "query", "SW1A 1AA"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				first("SW1A 1AA", place.TypeAddress)(t, r)
				if res := results(t, r); len(res) != 1 || res[0].ID != "pc:GB:SW1A1AA" {
					t.Fatalf("results %+v", res)
				}
			}},
			{Name: "200postcodeNoSpaceLowerCase", Req: get(search, "query", "sw1a1aa"), Status: 200, Check: first("SW1A 1AA", place.TypeAddress)},
			{Name: "200districtIsContainer", Req: get(search, "query", "SW1A"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				first("SW1A", place.TypePostcode)(t, r)
				if d := results(t, r)[0].Description; d != "London, Westminster - 3 addresses" {
					t.Fatalf("description %q", d)
				}
			}},
			{Name: "200partialPostcode", Req: get(search, "query", "la2"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				res := results(t, r)
				if len(res) != 2 || res[0].Text != "LA22" || res[1].Text != "LA23" {
					t.Fatalf("results %+v, want LA22 and LA23", res)
				}
			}},
			{Name: "200unknownUnitFindsDistrict", Req: get(search, "query", "SW1A 9ZZ"), Status: 200, Check: first("SW1A", place.TypePostcode)},
			{Name: "200eircodeRoutingKey", Req: get(search, "query", "d02"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				first("D02", place.TypeAddress)(t, r)
				if d := results(t, r)[0].Description; d != "Dublin, Dublin, Ireland" {
					t.Fatalf("description %q", d)
				}
			}},
			{Name: "400nothingToSearch", Req: get(search), Status: 400, Code: "validation_failed", Check: paths("query")},
			{Name: "400everyField", Req: get(search, "query", "a", "countryISO", "GBR", "limit", "0", "offset", "-1"), Status: 400, Code: "validation_failed", Check: paths("query", "countryISO", "limit", "offset")},
			{Name: "400limitNotNumber", Req: get(search, "query", "york", "limit", "ten"), Status: 400, Code: "bad_request"},
			{Name: "404unknownContainer", Req: get(search, "id", "pc:GB:ZZ99"), Status: 404, Code: "not_found"},
			{Name: "404foreignContainer", Req: get(search, "id", "R65606"), Status: 404, Code: "not_found"},
		})
		// Two typos are beyond the one-edit search; PostgreSQL still suggests
		// towns by trigram similarity.
		res := results(t, s.Do(get(search, "query", "Manchstr")))
		if pg := dbpkg.IsPostgres(db); pg && (len(res) == 0 || res[0].Text != "Manchester") || !pg && len(res) != 0 {
			t.Fatalf("Manchstr on %s: %+v", db.Dialect().Name(), res)
		}
	})
}

// TestTwoStepSearch drills down from a free-text search to an address and
// resolves it, as an address-capture client does.
func TestTwoStepSearch(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		district := results(t, s.Do(get(search, "query", "sw1a")))[0]
		if district.Type != place.TypePostcode {
			t.Fatalf("SW1A is %+v, want a postcode container", district)
		}
		r := s.Do(get(search, "id", district.ID))
		content := results(t, r)
		if len(content) != 3 || r.Header.Get("X-Total-Count") != "3" {
			t.Fatalf("content %+v (total %s), want 3 addresses", content, r.Header.Get("X-Total-Count"))
		}
		want := []string{"SW1A 0AA", "SW1A 1AA", "SW1A 2AA"}
		for i, c := range content {
			if c.Type != place.TypeAddress || c.Text != want[i] {
				t.Fatalf("content[%d] %+v, want address %s", i, c, want[i])
			}
			r := s.Do(get("/system/v1/locations/address", "id", c.ID, "source", c.Source))
			if r.Status != 200 {
				t.Fatalf("resolve %s: %d %s", c.ID, r.Status, r.Body)
			}
			loc := location(t, r)
			if loc.Address.Postcode != c.Text || loc.Address.City != "London" || loc.Address.RegionISO != "GB-WSM" || loc.Address.CountryISO != "GB" || loc.Address.CountryName != "United Kingdom" {
				t.Fatalf("location %+v", loc)
			}
		}
		// Paging and a filter inside the container.
		page := results(t, s.Do(get(search, "id", district.ID, "limit", "1", "offset", "1")))
		if len(page) != 1 || page[0].Text != "SW1A 1AA" {
			t.Fatalf("second page %+v", page)
		}
		filtered := results(t, s.Do(get(search, "id", district.ID, "query", "SW1A 2")))
		if len(filtered) != 1 || filtered[0].Text != "SW1A 2AA" {
			t.Fatalf("filtered %+v", filtered)
		}
		// A locality lists its postcode districts.
		kendal := results(t, s.Do(get(search, "query", "Kendal")))[0]
		districts := results(t, s.Do(get(search, "id", kendal.ID)))
		if len(districts) != 2 || districts[0].Text != "LA8" || districts[1].Text != "LA9" {
			t.Fatalf("Kendal holds %+v, want LA8 and LA9", districts)
		}
		// The two Newports keep their own postcodes.
		for _, c := range []struct{ country, want string }{{"Isle of Wight", "PO30"}, {"Newport, United Kingdom", "NP20"}} {
			var id string
			for _, x := range results(t, s.Do(get(search, "query", "Newport"))) {
				if strings.HasPrefix(x.Description, c.country) {
					id = x.ID
				}
			}
			got := results(t, s.Do(get(search, "id", id)))
			if len(got) != 1 || got[0].Text != c.want {
				t.Fatalf("Newport (%s) holds %+v, want %s", c.country, got, c.want)
			}
		}
		// A container filtered to another country is empty.
		if got := results(t, s.Do(get(search, "id", district.ID, "countryISO", "IE"))); len(got) != 0 {
			t.Fatalf("SW1A in IE: %+v", got)
		}
	})
}

const byID = "/system/v1/locations/address"

func TestLocationByAddressID(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		kendal := results(t, s.Do(get(search, "query", "Kendal")))[0]
		s.Run(t, []testkit.Scenario{
			{Name: "200place", Req: get(byID, "id", kendal.ID, "source", "gazetteer"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				loc := location(t, r)
				a := loc.Address
				if a.Name != "Kendal" || a.City != "Kendal" || a.Region != "Cumbria" || a.RegionISO != "GB-CMA" || a.CountryISO != "GB" || loc.ThreeWordAddress != "apple.meadow.tractor" {
					t.Fatalf("location %+v", loc)
				}
				if loc.Coordinates.Lat < 54.3 || loc.Coordinates.Lat > 54.35 || loc.Coordinates.Lon < -2.8 || loc.Coordinates.Lon > -2.7 {
					t.Fatalf("coordinates %+v are not Kendal's", loc.Coordinates)
				}
			}},
			{Name: "200withoutSource", Req: get(byID, "id", "pc:IE:T12"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				a := location(t, r).Address
				if a.Postcode != "T12" || a.City != "Cork" || a.RegionISO != "IE-CO" || a.CountryName != "Ireland" {
					t.Fatalf("address %+v", a)
				}
			}},
			{Name: "400missingID", Req: get(byID), Status: 400, Code: "validation_failed", Check: paths("id")},
			{Name: "400unknownSource", Req: get(byID, "id", kendal.ID, "source", "bogus"), Status: 400, Code: "validation_failed", Check: paths("source")},
			{Name: "404unknownPlace", Req: get(byID, "id", "pl:seed:gb-cma:nowhere"), Status: 404, Code: "not_found"},
			{Name: "404unknownPostcode", Req: get(byID, "id", "pc:GB:ZZ991ZZ", "source", "gazetteer"), Status: 404, Code: "not_found"},
			{Name: "404foreignID", Req: get(byID, "id", "N12345"), Status: 404, Code: "not_found"},
		})
	})
}

const byCoordinates = "/system/v1/locations/coordinates"

func TestLocationByCoordinates(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		near := func(city, regionISO, postcode string) func(t *testing.T, r *testkit.Response) {
			return func(t *testing.T, r *testkit.Response) {
				t.Helper()
				loc := location(t, r)
				a := loc.Address
				if a.City != city || a.RegionISO != regionISO || a.Postcode != postcode || a.Region == "" || a.CountryName == "" {
					t.Fatalf("address %+v, want %s (%s) %s", a, city, regionISO, postcode)
				}
			}
		}
		s.Run(t, []testkit.Scenario{
			{Name: "200kendal", Req: get(byCoordinates, "lat", "54.3285", "lon", "-2.7455"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				near("Kendal", "GB-CMA", "LA9")(t, r)
				if c := location(t, r).Coordinates; c.Lat != 54.3285 || c.Lon != -2.7455 {
					t.Fatalf("coordinates %+v, want the point asked", c)
				}
			}},
			{Name: "200buckinghamPalace", Req: get(byCoordinates, "lat", "51.5012", "lon", "-0.1415"), Status: 200, Check: near("London", "GB-WSM", "SW1A 1AA")},
			{Name: "200cork", Req: get(byCoordinates, "lat", "51.90", "lon", "-8.47"), Status: 200, Check: near("Cork", "IE-CO", "T12")},
			{Name: "200belfast", Req: get(byCoordinates, "lat", "54.60", "lon", "-5.93"), Status: 200, Check: near("Belfast", "GB-BFS", "BT1")},
			{Name: "200ruralWithinRange", Req: get(byCoordinates, "lat", "54.45", "lon", "-2.10"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				// Open moorland of the North Pennines: Barnard Castle is about
				// 15.5 km away, Kirkby Stephen 16.3 km, Hawes 17.4 km.
				if a := location(t, r).Address; a.City != "Barnard Castle" || a.RegionISO != "GB-DUR" {
					t.Fatalf("address %+v, want Barnard Castle", a)
				}
			}},
			{Name: "400outOfRange", Req: get(byCoordinates, "lat", "91", "lon", "-180.5"), Status: 400, Code: "validation_failed", Check: paths("lat", "lon")},
			{Name: "400missing", Req: get(byCoordinates, "lat", "54"), Status: 400, Code: "validation_failed", Check: paths("lon")},
			{Name: "400notNumber", Req: get(byCoordinates, "lat", "north", "lon", "1"), Status: 400, Code: "bad_request"},
			{Name: "404atlantic", Req: get(byCoordinates, "lat", "45", "lon", "-30"), Status: 404, Code: "not_found"},
			{Name: "404pole", Req: get(byCoordinates, "lat", "90", "lon", "0"), Status: 404, Code: "not_found"},
		})
	})
}

const byWords = "/system/v1/locations/three-word-address"

func TestLocationByThreeWords(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		s.Run(t, []testkit.Scenario{
			{Name: "200place", Req: get(byWords, "query", "apple.meadow.tractor"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				loc := location(t, r)
				if loc.ThreeWordAddress != "apple.meadow.tractor" || loc.Address.City != "Kendal" || loc.Address.RegionISO != "GB-CMA" {
					t.Fatalf("location %+v", loc)
				}
			}},
			{Name: "200printedForm", Req: get(byWords, "query", "///Silage.Robin.Orchard"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				if loc := location(t, r); loc.Address.City != "Cork" || loc.ThreeWordAddress != "silage.robin.orchard" {
					t.Fatalf("location %+v", loc)
				}
			}},
			{Name: "200postcode", Req: get(byWords, "query", "crown.garden.balcony"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				if a := location(t, r).Address; a.Postcode != "SW1A 1AA" || a.City != "London" {
					t.Fatalf("address %+v", a)
				}
			}},
			{Name: "400twoWords", Req: get(byWords, "query", "apple.meadow"), Status: 400, Code: "validation_failed", Check: paths("query")},
			{Name: "400spaces", Req: get(byWords, "query", "apple meadow tractor"), Status: 400, Code: "validation_failed", Check: paths("query")},
			{Name: "400digits", Req: get(byWords, "query", "apple.m3adow.tractor"), Status: 400, Code: "validation_failed", Check: paths("query")},
			{Name: "400missing", Req: get(byWords), Status: 400, Code: "validation_failed", Check: paths("query")},
			{Name: "404unknown", Req: get(byWords, "query", "unknown.sample.words"), Status: 404, Code: "not_found"},
		})
	})
}

func TestPublicButTokensVerified(t *testing.T) {
	s := newServer(t, testkit.DB(t, testkit.SQLite))
	r := s.Do(testkit.Request{Method: http.MethodGet, Path: search + "?query=york", Token: "not-a-token"})
	if r.Status != http.StatusUnauthorized {
		t.Fatalf("bad token on a public route: %d, want 401", r.Status)
	}
	r = s.Do(testkit.Request{Method: http.MethodGet, Path: search + "?query=york", Token: s.Token(testkit.Farmer)})
	if r.Status != http.StatusOK {
		t.Fatalf("valid token: %d", r.Status)
	}
}
