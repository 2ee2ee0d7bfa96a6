package listings

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/agritrade/api/livestock/internal/categories"
	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
)

// FuzzParseSearch feeds arbitrary query strings to the search parser: it must
// never panic, must fail only with a 400, and what it accepts must be a search
// the store can run (page in range, a complete point, a known sort).
func FuzzParseSearch(f *testing.F) {
	for _, seed := range []string{
		"", "limit=20&offset=0", "f:status=active-selling&f:commodityType=sheep", "f:commodityBreed=texel,mule&f:commodityBreed=cross",
		"latitude=53.5&longitude=-2.2&distanceKm=50&sortBy=createdAtUTC&sortDesc=true", "latitude=91", "minAge=3&maxAge=1",
		"docs=false&format=csv", "sortBy=distanceKm", "isWishlisted=true&docs=false", "latitude=NaN&longitude=Inf&distanceKm=1e999",
		"f:commodityBreedSociety=%00%ff&limit=-5", "sortBy=price&sortDesc=maybe",
	} {
		f.Add(seed)
	}
	gin.SetMode(gin.TestMode)
	f.Fuzz(func(t *testing.T, raw string) {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/livestock/v1/listings", RawQuery: raw}}
		s, err := ParseSearch(httpx.NewQuery(c))
		if err != nil {
			if e, ok := apierr.As(err); !ok || e.Status() != http.StatusBadRequest {
				t.Fatalf("%q: error %v is not a 400", raw, err)
			}
			return
		}
		if s.Page.Limit < 1 || s.Page.Limit > httpx.MaxLimit || s.Page.Offset < 0 {
			t.Fatalf("%q: page %+v", raw, s.Page)
		}
		if !slices.Contains(SortFields, s.Page.SortBy) || (s.Page.SortBy == SortDistance && s.Near == nil) {
			t.Fatalf("%q: sort %q with point %v", raw, s.Page.SortBy, s.Near)
		}
		if p := s.Near; p != nil && (p.Lat < -90 || p.Lat > 90 || p.Lon < -180 || p.Lon > 180 || p.Km < 0 || p.Km != p.Km) {
			t.Fatalf("%q: point %+v", raw, *p)
		}
		if s.Status != "" && !slices.Contains(StatusFilters, s.Status) || s.Kind != "" && !slices.Contains(categories.KindNames(), s.Kind) {
			t.Fatalf("%q: status %q kind %q", raw, s.Status, s.Kind)
		}
		if s.MinAge != nil && s.MaxAge != nil && *s.MinAge > *s.MaxAge || s.CSV && !s.Docs {
			t.Fatalf("%q: accepted %+v", raw, s)
		}
	})
}

// FuzzParseDraft feeds arbitrary bodies to the create parser of every kind: no
// panic, malformed JSON is a bad_request, and a body that passes is a listing
// that keeps every rule.
func FuzzParseDraft(f *testing.F) {
	for i := range categories.Kinds {
		b, _ := json.Marshal(map[string]any{
			"type": "selling", "isDraft": i%2 == 0, "categoryIds": []int{i + 1}, "files": nil, "description": "x", "tags": []string{"a"},
			"location": map[string]any{"coordinates": map[string]any{"lat": 54, "lon": -2}},
			"price":    map[string]any{"type": "fixed", "pricePerUnit": map[string]any{"amount": 1, "currency": "GBP"}},
			"properties": map[string]any{"breedType": "cross", "sexes": "ewes", "sex": "male", "minAge": 3, "maxAge": 4,
				"registration": map[string]any{"dateOfBirth": "2020-01-01", "isRegistered": true}},
		})
		f.Add(uint8(i), b)
	}
	f.Add(uint8(0), []byte(`{"categoryIds":[1e999,-0,"1",[],{}],"price":{"pricePerUnit":null,"minPrice":{"amount":"1"}}}`))
	f.Add(uint8(1), []byte(`[]`))
	f.Add(uint8(2), []byte(`{"properties":{"registration":{"dateOfBirth":"2024-02-30T00:00:00Z"}}} x`))
	f.Fuzz(func(t *testing.T, k uint8, raw []byte) {
		kind := categories.Kinds[int(k)%len(categories.Kinds)]
		d, fields, err := ParseDraft(kind, raw)
		if err != nil {
			if !apierr.IsCode(err, apierr.CodeBadRequest) {
				t.Fatalf("error %v is not bad_request", err)
			}
			return
		}
		if !fields.Empty() {
			for _, fe := range fields.List() {
				if fe.Code == "" || fe.Message == "" {
					t.Fatalf("field error without code or message: %+v", fe)
				}
			}
			return
		}
		if !slices.Contains(Types, d.Type) || d.Description == "" || len(d.Description) > 4*MaxDescription ||
			!IsCurrency(d.Price.PricePerUnit.Currency) || d.Price.PricePerUnit.Amount < 0 {
			t.Fatalf("accepted %+v", d)
		}
		for i, id := range d.CategoryIDs {
			if id < 1 || slices.Contains(d.CategoryIDs[:i], id) {
				t.Fatalf("accepted category ids %v", d.CategoryIDs)
			}
		}
		if (d.Properties != nil) != kind.HasProperties() {
			t.Fatalf("%s: properties %v", kind, d.Properties)
		}
		if d.Properties != nil {
			sf := d.Properties.searchable()
			if sf.Breed == "" || !slices.Contains(categories.Values(kind, categories.GroupBreed), sf.Breed) {
				t.Fatalf("accepted breed %q", sf.Breed)
			}
			if sf.MinAge != nil && (sf.MaxAge == nil || *sf.MinAge > *sf.MaxAge) {
				t.Fatalf("accepted ages %v %v", sf.MinAge, sf.MaxAge)
			}
		}
		if l := d.Location; l != nil && (l.Coordinates.Lat < -90 || l.Coordinates.Lat > 90 || l.Coordinates.Lon < -180 || l.Coordinates.Lon > 180) {
			t.Fatalf("accepted coordinates %+v", l.Coordinates)
		}
	})
}

// FuzzParseSmallBodies feeds arbitrary bodies to the edit, close, report and
// review parsers: no panic, and only 400s.
func FuzzParseSmallBodies(f *testing.F) {
	for _, seed := range []string{`{"status":"sold"}`, `{"reason":"other","message":null}`, `{"decision":"clear"}`,
		`{"isDraft":false,"price":{"type":"fixed","pricePerUnit":{"amount":5,"currency":"EUR"}}}`, `{}`, `null`, `{"files":[{"id":1}]}`} {
		f.Add(uint8(0), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, k uint8, raw []byte) {
		check := func(err error) {
			if e, ok := apierr.As(err); err != nil && (!ok || e.Status() != http.StatusBadRequest) {
				t.Fatalf("error %v is not a 400", err)
			}
		}
		kind := categories.Kinds[int(k)%len(categories.Kinds)]
		_, fields, err := ParsePatch(kind, raw)
		check(err)
		if fields != nil {
			check(fields.Err())
		}
		_, err = ParseClose(raw)
		check(err)
		_, _, err = ParseReport(raw)
		check(err)
		_, err = ParseReview(raw)
		check(err)
	})
}
