package locations_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system/internal/locations"
	"github.com/agritrade/api/system/internal/locations/gazetteer"
	"github.com/agritrade/api/system/internal/locations/outside"
	"github.com/agritrade/api/system/internal/locations/place"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
)

// fakeService is a local HTTP server answering like an outside location
// service, from recorded answer shapes in testdata/.
type fakeService struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string]int
	last  map[string]*http.Request
	// route picks the answer: status and fixture file.
	route func(r *http.Request) (int, string)
	// delay holds every answer back (timeout tests).
	delay time.Duration
}

func newFakeService(t *testing.T, route func(r *http.Request) (int, string)) *fakeService {
	t.Helper()
	f := &fakeService{calls: map[string]int{}, last: map[string]*http.Request{}, route: route}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.calls[r.URL.Path]++
		f.last[r.URL.Path] = r.Clone(r.Context())
		delay, route := f.delay, f.route
		f.mu.Unlock()
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		status, file := route(r)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "7")
		}
		w.WriteHeader(status)
		if file != "" {
			b, err := os.ReadFile(filepath.Join("testdata", file))
			if err != nil {
				t.Errorf("fixture %s: %v", file, err)
				return
			}
			_, _ = w.Write(b)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeService) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[path]
}

func (f *fakeService) request(path string) *http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last[path]
}

func (f *fakeService) set(route func(r *http.Request) (int, string), delay time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.route, f.delay = route, delay
}

// outsideConfig configures the adapters against local servers: no pacing (its
// timing is unit-tested with a fake clock) and a short timeout.
func outsideConfig(provider string, mutate func(c *config.Config)) func(c *config.Config) {
	return func(c *config.Config) {
		c.Set("locations.provider", provider)
		c.Set("locations.min_interval", 0)
		c.Set("locations.timeout", 2*time.Second)
		c.Set("locations.user_agent", "AgriTrade-test/1.0 (tests@agritrade.example)")
		if mutate != nil {
			mutate(c)
		}
	}
}

func nominatimRoute(r *http.Request) (int, string) {
	switch r.URL.Path {
	case "/search":
		return 200, "nominatim_search.json"
	case "/lookup":
		if r.URL.Query().Get("osm_ids") == "R118362" {
			return 200, "nominatim_lookup.json"
		}
		return 200, "nominatim_lookup_empty.json"
	case "/reverse":
		if strings.HasPrefix(r.URL.Query().Get("lat"), "45.") {
			return 200, "nominatim_reverse_nothing.json"
		}
		return 200, "nominatim_reverse.json"
	}
	return 404, ""
}

func TestNominatimAdapter(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		fake := newFakeService(t, nominatimRoute)
		s := newServer(t, db, outsideConfig(locations.ProviderNominatim, func(c *config.Config) {
			c.Set("locations.nominatim_url", fake.URL+"/")
			c.Set("locations.timeout", 300*time.Millisecond)
		}))
		s.Run(t, []testkit.Scenario{
			{Name: "200search", Req: get(search, "query", "Kendal", "countryISO", "gb"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				res := results(t, r)
				if len(res) != 2 || res[0].ID != "R118362" || res[0].Text != "Kendal" || res[0].Type != place.TypeAddress ||
					res[0].Source != outside.SourceNominatim || res[0].Description != "Westmorland and Furness, England, United Kingdom" || res[1].ID != "W4313806" {
					t.Fatalf("results %+v", res)
				}
				q := fake.request("/search").URL.Query()
				if q.Get("q") != "Kendal" || q.Get("format") != "jsonv2" || q.Get("countrycodes") != "gb" || q.Get("addressdetails") != "1" {
					t.Fatalf("query sent %v", q)
				}
				if ua := fake.request("/search").Header.Get("User-Agent"); ua != "AgriTrade-test/1.0 (tests@agritrade.example)" {
					t.Fatalf("User-Agent %q", ua)
				}
			}},
			{Name: "200searchCached", Req: get(search, "query", "Kendal", "countryISO", "GB"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				if n := fake.count("/search"); n != 1 {
					t.Fatalf("%d requests to Nominatim for the same search, want 1 (cached)", n)
				}
			}},
			{Name: "200resolve", Req: get(byID, "id", "R118362", "source", "nominatim"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				loc := location(t, r)
				a := loc.Address
				if a.Name != "Kendal" || a.City != "Kendal" || a.Region != "England" || a.RegionISO != "GB-ENG" || a.CountryISO != "GB" || a.CountryName != "United Kingdom" ||
					loc.Coordinates.Lat != 54.3280689 || loc.Coordinates.Lon != -2.7462881 {
					t.Fatalf("location %+v", loc)
				}
				if ids := fake.request("/lookup").URL.Query().Get("osm_ids"); ids != "R118362" {
					t.Fatalf("lookup of %q", ids)
				}
			}},
			{Name: "200resolveBySourceOfID", Req: get(byID, "id", "R118362"), Status: 200},
			{Name: "404resolveUnknown", Req: get(byID, "id", "N1", "source", "nominatim"), Status: 404, Code: "not_found"},
			{Name: "200gazetteerStillResolves", Req: get(byID, "id", "pc:GB:SW1A1AA"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				if a := location(t, r).Address; a.Postcode != "SW1A 1AA" {
					t.Fatalf("address %+v", a)
				}
			}},
			{Name: "200gazetteerContainer", Req: get(search, "id", "pc:GB:SW1A"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				if res := results(t, r); len(res) != 3 || res[0].Source != gazetteer.SourceGazetteer {
					t.Fatalf("results %+v", res)
				}
			}},
			{Name: "200reverseCountyLevel", Req: get(byCoordinates, "lat", "54.2325", "lon", "-1.342"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				loc := location(t, r)
				a := loc.Address
				if a.Line1 != "Market Place" || a.City != "Thirsk" || a.Region != "North Yorkshire" || a.RegionISO != "GB-NYK" || a.Postcode != "YO7 1LB" ||
					loc.Coordinates.Lat != 54.2325 || loc.Coordinates.Lon != -1.342 {
					t.Fatalf("location %+v", loc)
				}
			}},
			{Name: "404reverseSea", Req: get(byCoordinates, "lat", "45", "lon", "-30"), Status: 404, Code: "not_found"},
		})
		fake.set(func(*http.Request) (int, string) { return http.StatusServiceUnavailable, "" }, 0)
		s.Run(t, []testkit.Scenario{{Name: "503serviceDown", Req: get(search, "query", "Ambleside"), Status: 503, Code: "unavailable", Check: func(t *testing.T, r *testkit.Response) {
			if r.Header.Get("Retry-After") != "7" {
				t.Fatalf("Retry-After %q, want the service's 7", r.Header.Get("Retry-After"))
			}
		}}})
		fake.set(nominatimRoute, time.Second)
		s.Run(t, []testkit.Scenario{{Name: "503timeout", Req: get(search, "query", "Windermere"), Status: 503, Code: "unavailable"}})
	})
}

func photonRoute(r *http.Request) (int, string) {
	switch r.URL.Path {
	case "/api":
		return 200, "photon_search.json"
	case "/reverse":
		if strings.HasPrefix(r.URL.Query().Get("lat"), "45.") {
			return 200, "photon_empty.json"
		}
		return 200, "photon_reverse.json"
	}
	return 404, ""
}

func TestPhotonAdapter(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		fake := newFakeService(t, photonRoute)
		s := newServer(t, db, outsideConfig(locations.ProviderPhoton, func(c *config.Config) { c.Set("locations.photon_url", fake.URL) }))
		var kendal string
		s.Run(t, []testkit.Scenario{
			{Name: "200searchCountryFiltered", Req: get(search, "query", "Kendal", "countryISO", "GB", "limit", "5"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				res := results(t, r)
				if len(res) != 2 || res[0].Text != "Kendal" || res[1].Text != "Kendal Road" || res[0].Source != outside.SourcePhoton {
					t.Fatalf("results %+v, want the two GB features", res)
				}
				if res[0].ID != "R118362@54.32807,-2.74629" || res[1].Description != "Kendal, Westmorland and Furness, United Kingdom" {
					t.Fatalf("results %+v", res)
				}
				if q := fake.request("/api").URL.Query(); q.Get("q") != "Kendal" || q.Get("limit") != "15" {
					t.Fatalf("query sent %v", q)
				}
				kendal = res[0].ID
			}},
		})
		s.Run(t, []testkit.Scenario{
			{Name: "200resolve", Req: get(byID, "id", kendal, "source", "photon"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				loc := location(t, r)
				if a := loc.Address; a.Name != "Kendal" || a.City != "Kendal" || a.Region != "Westmorland and Furness" || a.CountryISO != "GB" {
					t.Fatalf("location %+v", loc)
				}
				if q := fake.request("/reverse").URL.Query(); q.Get("lat") != "54.328070" || q.Get("lon") != "-2.746290" {
					t.Fatalf("reverse at %v", q)
				}
			}},
			{Name: "400sourceNotConfigured", Req: get(byID, "id", kendal, "source", "nominatim"), Status: 400, Code: "validation_failed", Check: paths("source")},
			{Name: "200reverse", Req: get(byCoordinates, "lat", "54.3284", "lon", "-2.7454"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				a := location(t, r).Address
				if a.Name != "Kendal Town Hall" || a.Line1 != "1 Highgate" || a.City != "Kendal" || a.Postcode != "LA9 4DL" {
					t.Fatalf("address %+v", a)
				}
			}},
			{Name: "404reverseSea", Req: get(byCoordinates, "lat", "45", "lon", "-30"), Status: 404, Code: "not_found"},
			{Name: "404resolveMalformedID", Req: get(byID, "id", "R118362", "source", "photon"), Status: 404, Code: "not_found"},
		})
	})
}

const threeWordKey = "test-three-word-key-5b2f"

func threeWordRoute(r *http.Request) (int, string) {
	if r.Header.Get("X-Api-Key") != threeWordKey {
		return http.StatusUnauthorized, "threeword_invalidkey.json"
	}
	q := r.URL.Query()
	switch r.URL.Path {
	case "/v3/convert-to-coordinates":
		switch q.Get("words") {
		case "orchard.lantern.hedgehog":
			return 200, "threeword_coordinates.json"
		case "ocean.tide.compass":
			return 200, "threeword_sea.json"
		}
		return http.StatusBadRequest, "threeword_badwords.json"
	case "/v3/convert-to-3wa":
		return 200, "threeword_coordinates.json"
	}
	return 404, ""
}

func TestThreeWordAdapter(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		fake := newFakeService(t, threeWordRoute)
		s := newServer(t, db, outsideConfig(locations.ProviderGazetteer, func(c *config.Config) {
			c.Set("locations.three_word_url", fake.URL)
			c.Set("locations.three_word_key", threeWordKey)
		}))
		s.Run(t, []testkit.Scenario{
			{Name: "200words", Req: get(byWords, "query", "///orchard.lantern.hedgehog"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				loc := location(t, r)
				// The point comes from the service, the address from the gazetteer.
				if loc.ThreeWordAddress != "orchard.lantern.hedgehog" || loc.Address.City != "Kendal" || loc.Address.RegionISO != "GB-CMA" || loc.Address.Postcode != "LA9" ||
					loc.Coordinates.Lat != 54.328421 || loc.Coordinates.Lon != -2.745389 {
					t.Fatalf("location %+v", loc)
				}
				if got := fake.request("/v3/convert-to-coordinates").URL.Query(); got.Get("key") != "" || got.Get("words") != "orchard.lantern.hedgehog" {
					t.Fatalf("query sent %v (the key belongs in the header)", got)
				}
			}},
			{Name: "200wordsAtSea", Req: get(byWords, "query", "ocean.tide.compass"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				loc := location(t, r)
				if loc.ThreeWordAddress != "ocean.tide.compass" || loc.Address.City != "" || loc.Coordinates.Lat != 45.000001 {
					t.Fatalf("location %+v", loc)
				}
			}},
			{Name: "404unknownWords", Req: get(byWords, "query", "unknown.sample.words"), Status: 404, Code: "not_found"},
			{Name: "400malformedNotSent", Req: get(byWords, "query", "not-three-words"), Status: 400, Code: "validation_failed", Check: func(t *testing.T, r *testkit.Response) {
				if n := fake.count("/v3/convert-to-coordinates"); n != 3 {
					t.Fatalf("%d calls to the service, want 3: malformed input must not reach it", n)
				}
			}},
			{Name: "200coordinatesWithWords", Req: get(byCoordinates, "lat", "54.3284", "lon", "-2.7454"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				loc := location(t, r)
				if loc.ThreeWordAddress != "orchard.lantern.hedgehog" || loc.Address.City != "Kendal" {
					t.Fatalf("location %+v", loc)
				}
				if c := fake.request("/v3/convert-to-3wa").URL.Query().Get("coordinates"); c != "54.328400,-2.745400" {
					t.Fatalf("coordinates sent %q", c)
				}
			}},
		})
		if strings.Contains(s.Logs.String(), threeWordKey) {
			t.Fatal("the three-word service key appears in the logs")
		}
	})
}

func TestThreeWordAdapterBadKey(t *testing.T) {
	fake := newFakeService(t, threeWordRoute)
	s := newServer(t, testkit.DB(t, testkit.SQLite), outsideConfig(locations.ProviderGazetteer, func(c *config.Config) {
		c.Set("locations.three_word_url", fake.URL)
		c.Set("locations.three_word_key", "wrong-key")
	}))
	s.Run(t, []testkit.Scenario{
		// A bad key is the operator's fault: 503, never a 4xx blaming the client.
		{Name: "503badKey", Req: get(byWords, "query", "orchard.lantern.hedgehog"), Status: 503, Code: "unavailable"},
		// Reverse lookups still answer, without words.
		{Name: "200coordinatesWithoutWords", Req: get(byCoordinates, "lat", "54.3284", "lon", "-2.7454"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
			if loc := location(t, r); loc.ThreeWordAddress != "" || loc.Address.City != "Kendal" {
				t.Fatalf("location %+v", loc)
			}
		}},
	})
	if strings.Contains(s.Logs.String(), "wrong-key") {
		t.Fatal("the key appears in the logs")
	}
}

func TestUnknownProvider(t *testing.T) {
	cfg := config.Default()
	cfg.Set("locations.provider", "carrier-pigeon")
	if _, err := locations.New(locations.Deps{Config: cfg, DB: testkit.DB(t, testkit.SQLite), Log: logrus.NewEntry(logrus.StandardLogger())}); err == nil || !strings.Contains(err.Error(), "carrier-pigeon") {
		t.Fatalf("err %v, want the bad provider named", err)
	}
}
