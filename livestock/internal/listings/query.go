package listings

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/agritrade/api/livestock/internal/categories"
	"github.com/agritrade/api/platform/httpx"
)

// The values of the f:status search filter (seed): active-selling and
// active-buying are active listings of that type; sold and found are the
// caller's organisation's closed listings.
const (
	FilterActiveSelling = "active-selling"
	FilterActiveBuying  = "active-buying"
)

// StatusFilters lists the values of f:status.
var StatusFilters = []string{FilterActiveSelling, FilterActiveBuying, StatusSold, StatusFound}

// The sortBy values of the search.
const (
	SortCreated  = "createdAtUTC"
	SortUpdated  = "updatedAtUTC"
	SortPrice    = "price"
	SortDistance = "distanceKm"
)

// SortFields lists the sortBy values of the search.
var SortFields = []string{SortCreated, SortUpdated, SortPrice, SortDistance}

// sortDistanceAlias is accepted for SortDistance (the spelling).
const sortDistanceAlias = "distance"

// Limits of the search query.
const (
	maxFilterValues = 50
	maxFilterLen    = 100
)

// Point is the centre and radius of a distance search.
type Point struct {
	Lat, Lon, Km float64
}

// Filter is what a search keeps; each field is one filter of the seed.
type Filter struct {
	Status         string
	Kind           string
	Breeds         []string
	Societies      []string
	Sexes          string
	AdditionalInfo string
	MinAge, MaxAge *float64
	Wishlisted     bool
	Near           *Point
	// UpdatedSince keeps the listings changed after it (catch-up); without a
	// status filter it also brings the caller's organisations' drafts and
	// closed listings, so a client learns of its own closures.
	UpdatedSince *time.Time
}

// Search is a parsed search request.
type Search struct {
	Filter
	Page httpx.Page
	// Docs false answers the facets only.
	Docs bool
	// CSV streams every match as CSV.
	CSV bool
}

// ParseSearch reads the search query: unparseable numbers and booleans and an
// unknown sortBy answer bad_request; values out of range or of no enumeration,
// and an incomplete point, answer validation_failed naming every parameter.
func ParseSearch(q *httpx.Query) (Search, error) {
	s := Search{Docs: q.Bool("docs", true)}
	s.Page = q.Page(append(slices.Clone(SortFields), sortDistanceAlias), "", false)
	if s.Page.SortBy == sortDistanceAlias {
		s.Page.SortBy = SortDistance
	}
	s.CSV = q.Enum("format", "json", "csv") == "csv"
	s.Status = q.Enum("f:status", StatusFilters...)
	s.Kind = q.Enum("f:commodityType", categories.KindNames()...)
	s.Breeds = filterValues(q, "f:commodityBreed", true)
	s.Societies = filterValues(q, "f:commodityBreedSociety", false)
	s.Sexes = q.Enum("f:commoditySexes", Sexes...)
	s.AdditionalInfo = q.Enum("f:commodityAdditionalInfo", AddInfo...)
	s.Wishlisted = q.Bool("isWishlisted", false)
	f := q.Fields()
	s.MinAge = nonNegative(q, "minAge")
	s.MaxAge = nonNegative(q, "maxAge")
	if s.MinAge != nil && s.MaxAge != nil && *s.MinAge > *s.MaxAge {
		f.Add("maxAge", "range", "must not be below minAge", map[string]any{"min": *s.MinAge, "actual": *s.MaxAge})
	}
	s.Near = parsePoint(q)
	s.UpdatedSince = q.Since("updatedSinceUTC")
	switch {
	case s.Page.SortBy == "" && s.UpdatedSince != nil:
		// Catching up: the oldest change first, so a client pages forward and
		// keeps the last updatedAtUTC it saw as its next updatedSinceUTC.
		s.Page.SortBy = SortUpdated
	case s.Page.SortBy == SortDistance && s.Near == nil:
		f.Add("sortBy", "requires", "distanceKm sorting needs latitude, longitude and distanceKm", nil)
	case s.Page.SortBy == "" && s.Near != nil:
		// Around a point the nearest come first unless told otherwise.
		s.Page.SortBy = SortDistance
	case s.Page.SortBy == "":
		// Newest first by default.
		s.Page.SortBy = SortCreated
		s.Page.SortDesc = q.Bool("sortDesc", true)
	}
	if s.CSV && !s.Docs {
		f.Add("format", "combination", "format=csv cannot be combined with docs=false", nil)
	}
	if err := q.Err(); err != nil {
		return Search{}, err
	}
	return s, nil
}

// filterValues reads a repeatable, comma-separable filter (any of its values).
func filterValues(q *httpx.Query, name string, lower bool) []string {
	vals := q.Strings(name)
	f := q.Fields()
	if len(vals) > maxFilterValues {
		f.Add(name, "max_items", "too many values", map[string]any{"max": maxFilterValues, "actual": len(vals)})
		return nil
	}
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		if !f.MaxLen(name, v, maxFilterLen) {
			return nil
		}
		if lower {
			v = strings.ToLower(v)
		}
		out = append(out, v)
	}
	return out
}

func nonNegative(q *httpx.Query, name string) *float64 {
	v, ok := q.Float(name)
	if !ok {
		return nil
	}
	if !q.Fields().Check(v >= 0, name, "range", "must not be negative") {
		return nil
	}
	return &v
}

// parsePoint reads latitude, longitude and distanceKm: all three or none.
func parsePoint(q *httpx.Query) *Point {
	names := []string{"latitude", "longitude", "distanceKm"}
	given := 0
	for _, n := range names {
		if q.Has(n) {
			given++
		}
	}
	if given == 0 {
		return nil
	}
	f := q.Fields()
	if given < len(names) {
		for _, n := range names {
			if !q.Has(n) {
				f.Add(n, "required", "latitude, longitude and distanceKm must be given together", nil)
			}
		}
		return nil
	}
	lat, okLat := q.Float("latitude")
	lon, okLon := q.Float("longitude")
	km, okKm := q.Float("distanceKm")
	okLat = okLat && f.Check(lat >= -90 && lat <= 90, "latitude", "range", "must be between -90 and 90")
	okLon = okLon && f.Check(lon >= -180 && lon <= 180, "longitude", "range", "must be between -180 and 180")
	okKm = okKm && f.Check(km >= 0 && km <= math.Pi*EarthRadiusKm, "distanceKm", "range", "must be between 0 and 20015 (half the Earth's circumference)")
	if !okLat || !okLon || !okKm {
		return nil
	}
	return &Point{Lat: lat, Lon: lon, Km: km}
}
