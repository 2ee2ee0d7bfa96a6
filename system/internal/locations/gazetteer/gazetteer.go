// Package gazetteer is the location provider kept in the database: the
// gazetteer_places and gazetteer_postcodes tables (store.go), their search,
// resolution and reverse lookups (gazetteer.go), the embedded seed of UK and
// Irish places (seed.go) and the streaming GeoNames importer (importer.go).
package gazetteer

import (
	"context"
	"math"
	"sort"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/system/internal/locations/place"
)

// SourceGazetteer names the embedded provider in results' source.
const SourceGazetteer = "gazetteer"

// Public ids of gazetteer results: a prefix tells the table.
const (
	placeIDPrefix    = "pl:"
	postcodeIDPrefix = "pc:"
)

// Fuzzy search bounds: names shorter than minFuzzyLen are not corrected,
// variants are looked up for names of up to maxVariantLen letters (about 55
// per letter), and candidate lists are capped.
const (
	minFuzzyLen   = 3
	maxVariantLen = 40
	candidateCap  = 2000
	similarCap    = 50
)

// Reverse lookups widen the search box step by step, so that a dense
// gazetteer is searched in a small box first.
var reverseSteps = []float64{2, 8}

// districtPenaltyKm is added to a postcode district's distance in reverse
// lookups, so that a full postcode about as near wins.
const districtPenaltyKm = 0.5

// Gazetteer is the embedded provider over the database.
type Gazetteer struct {
	store *Store
	// maxKm is the farthest a reverse lookup looks for a place.
	maxKm float64
}

// NewGazetteer builds the embedded provider.
func NewGazetteer(store *Store, maxKm float64) *Gazetteer {
	if maxKm <= 0 {
		maxKm = 25
	}
	return &Gazetteer{store: store, maxKm: maxKm}
}

// Source implements Provider.
func (g *Gazetteer) Source() string { return SourceGazetteer }

// Owns implements Provider: gazetteer ids start with pl: or pc:.
func (g *Gazetteer) Owns(id string) bool {
	return strings.HasPrefix(id, placeIDPrefix) || strings.HasPrefix(id, postcodeIDPrefix)
}

// Search implements Provider.
func (g *Gazetteer) Search(ctx context.Context, q place.SearchQuery) ([]place.SearchResult, int, error) {
	if q.Container != "" {
		return g.expand(ctx, q)
	}
	// UK and Irish postcodes are recognised by their format; other countries'
	// codes hold digits ("75001"), which place names do not.
	if place.LooksLikePostcode(q.Text) || strings.ContainsAny(q.Text, "0123456789") {
		res, err := g.searchPostcodes(ctx, q)
		if err != nil || len(res) > 0 {
			return res, len(res), err
		}
	}
	res, err := g.searchNames(ctx, q)
	return res, len(res), err
}

func (g *Gazetteer) searchPostcodes(ctx context.Context, q place.SearchQuery) ([]place.SearchResult, error) {
	norm := place.PostcodeNorm(q.Text)
	if norm == "" {
		return nil, nil
	}
	rows, err := g.store.PostcodesByPrefix(ctx, norm, q.Country, q.Limit)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	if len(rows) == 0 {
		// An unknown full postcode still finds its district: "SW1A 9ZZ" → SW1A.
		if pc, ok := place.ParsePostcode(q.Country, q.Text); ok && pc.District != "" {
			if rows, err = g.store.PostcodeByCode(ctx, pc.District, pc.Country); err != nil {
				return nil, apierr.Internal(err)
			}
		}
	}
	out := make([]place.SearchResult, len(rows))
	for i, r := range rows {
		out[i] = postcodeResult(r)
	}
	return out, nil
}

func (g *Gazetteer) searchNames(ctx context.Context, q place.SearchQuery) ([]place.SearchResult, error) {
	n := place.Normalize(q.Text)
	if n == "" {
		return []place.SearchResult{}, nil
	}
	rows, err := g.store.PlacesByPrefix(ctx, n, q.Country, q.Limit)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	if len(rows) == 0 {
		if rows, err = g.fuzzy(ctx, n, q.Country, q.Limit); err != nil {
			return nil, apierr.Internal(err)
		}
	}
	out := make([]place.SearchResult, len(rows))
	for i, r := range rows {
		out[i] = placeResult(r)
	}
	return out, nil
}

// fuzzy finds names one typo away from n (a letter wrong, missing, extra or
// two letters swapped), also as the start of a longer name. A whole name one
// typo away is one of n's one-edit variants: they are looked up at once, one
// index seek each. A name typed in part with a typo in its second half still
// starts with n's first half: those names are an index range, verified here.
// When nothing is one typo away, PostgreSQL suggests trigram-similar towns.
func (g *Gazetteer) fuzzy(ctx context.Context, n, countryISO string, limit int) ([]placeRow, error) {
	r := []rune(n)
	if len(r) < minFuzzyLen {
		return nil, nil
	}
	// rank: 0 the whole name is one edit away, 1 its start is, 2 trigram-similar only.
	rank := map[string]int{}
	consider := func(names []string, loose bool) {
		for _, name := range names {
			var r int
			switch {
			case place.WithinOneEdit(n, name):
				r = 0
			case place.PrefixWithinOneEdit(n, name):
				r = 1
			case loose:
				r = 2
			default:
				continue
			}
			if old, ok := rank[name]; !ok || r < old {
				rank[name] = r
			}
		}
	}
	if len(r) <= maxVariantLen {
		names, err := g.store.NamesIn(ctx, place.OneEditVariants(n), countryISO)
		if err != nil {
			return nil, err
		}
		consider(names, false)
	}
	// A whole name one typo away is the likely intent: only without one is the
	// query taken as the start of a name.
	if len(rank) == 0 {
		names, err := g.store.NamesByPrefix(ctx, string(r[:(len(r)+1)/2]), countryISO, candidateCap)
		if err != nil {
			return nil, err
		}
		consider(names, false)
	}
	if len(rank) == 0 {
		names, err := g.store.SimilarNames(ctx, n, countryISO, similarCap)
		if err != nil {
			return nil, err
		}
		consider(names, true)
	}
	if len(rank) == 0 {
		return nil, nil
	}
	// Keep the best-ranked names only, so that a correction is not drowned by
	// loose suggestions.
	keep := make([]string, 0, len(rank))
	for name := range rank {
		keep = append(keep, name)
	}
	sort.Slice(keep, func(i, j int) bool {
		if rank[keep[i]] != rank[keep[j]] {
			return rank[keep[i]] < rank[keep[j]]
		}
		return keep[i] < keep[j]
	})
	if len(keep) > 4*limit {
		keep = keep[:4*limit]
	}
	rows, err := g.store.PlacesByNames(ctx, keep, countryISO, 4*limit)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if ri, rj := rank[rows[i].NameNorm], rank[rows[j].NameNorm]; ri != rj {
			return ri < rj
		}
		return rows[i].Population > rows[j].Population
	})
	if len(rows) > limit {
		rows = rows[:limit]
	}
	return rows, nil
}

// expand lists what a container holds: the full postcodes of a district, or
// the postcodes of a locality. Text, when given, keeps those starting with it.
func (g *Gazetteer) expand(ctx context.Context, q place.SearchQuery) ([]place.SearchResult, int, error) {
	filter := place.PostcodeNorm(q.Text)
	var (
		rows  []postcodeRow
		total int
		err   error
	)
	switch {
	case strings.HasPrefix(q.Container, postcodeIDPrefix):
		d, found, ferr := g.store.Postcode(ctx, strings.TrimPrefix(q.Container, postcodeIDPrefix))
		if ferr != nil {
			return nil, 0, apierr.Internal(ferr)
		}
		if !found {
			return nil, 0, apierr.NotFound("container")
		}
		if !d.IsDistrict || (q.Country != "" && d.CountryISO != q.Country) {
			return []place.SearchResult{}, 0, nil
		}
		rows, total, err = g.store.DistrictPostcodes(ctx, d, filter, q.Limit, q.Offset)
	case strings.HasPrefix(q.Container, placeIDPrefix):
		p, found, ferr := g.store.Place(ctx, strings.TrimPrefix(q.Container, placeIDPrefix))
		if ferr != nil {
			return nil, 0, apierr.Internal(ferr)
		}
		if !found {
			return nil, 0, apierr.NotFound("container")
		}
		if q.Country != "" && p.CountryISO != q.Country {
			return []place.SearchResult{}, 0, nil
		}
		rows, total, err = g.store.LocalityPostcodes(ctx, p, filter, q.Limit, q.Offset)
	default:
		return nil, 0, apierr.NotFound("container")
	}
	if err != nil {
		return nil, 0, apierr.Internal(err)
	}
	out := make([]place.SearchResult, len(rows))
	for i, r := range rows {
		out[i] = postcodeResult(r)
	}
	return out, total, nil
}

// Resolve implements Provider: a place or a postcode (also a container, at
// its centre) by its public id.
func (g *Gazetteer) Resolve(ctx context.Context, id string) (*place.Location, error) {
	switch {
	case strings.HasPrefix(id, placeIDPrefix):
		p, found, err := g.store.Place(ctx, strings.TrimPrefix(id, placeIDPrefix))
		if err != nil {
			return nil, apierr.Internal(err)
		}
		if found {
			return placeLocation(p), nil
		}
	case strings.HasPrefix(id, postcodeIDPrefix):
		pc, found, err := g.store.Postcode(ctx, strings.TrimPrefix(id, postcodeIDPrefix))
		if err != nil {
			return nil, apierr.Internal(err)
		}
		if found {
			return postcodeLocation(pc), nil
		}
	}
	return nil, apierr.NotFound("address")
}

// Reverse implements Provider: the nearest place within maxKm, with its
// region, and the nearest postcode as the address's postcode. The box around
// the point grows step by step; within a box the rows come nearest first by
// a flat-earth approximation and the great-circle distance decides.
func (g *Gazetteer) Reverse(ctx context.Context, c place.Coordinates) (*place.Location, error) {
	near, placeKm, err := nearest(ctx, g, c, func(b place.Box, cos float64) ([]placeRow, error) {
		return g.store.PlacesInBox(ctx, b, c, cos, 8)
	}, func(r placeRow) float64 { return place.DistanceKm(c, place.Coordinates{Lat: r.Lat, Lon: r.Lon}) })
	if err != nil {
		return nil, apierr.Internal(err)
	}
	// A full postcode beats a district whose centre is barely nearer: it says more.
	pc, pcKm, err := nearest(ctx, g, c, func(b place.Box, cos float64) ([]postcodeRow, error) {
		return g.store.PostcodesInBox(ctx, b, c, cos, 8)
	}, func(r postcodeRow) float64 {
		d := place.DistanceKm(c, place.Coordinates{Lat: r.Lat, Lon: r.Lon})
		if r.IsDistrict {
			d += districtPenaltyKm
		}
		return d
	})
	if err != nil {
		return nil, apierr.Internal(err)
	}
	var loc *place.Location
	switch {
	case placeKm >= 0:
		loc = placeLocation(near)
		loc.ThreeWordAddress = ""
		if pcKm >= 0 {
			loc.Address.Postcode = pc.Code
		}
	case pcKm >= 0:
		loc = postcodeLocation(pc)
		loc.ThreeWordAddress = ""
	default:
		return nil, apierr.NotFound("place near these coordinates")
	}
	loc.Coordinates = c
	return loc, nil
}

// nearest answers the row nearest c within maxKm by the distance function
// dist (great-circle kilometres, possibly plus a penalty), or a negative
// distance when there is none.
func nearest[R any](ctx context.Context, g *Gazetteer, c place.Coordinates, inBox func(place.Box, float64) ([]R, error), dist func(R) float64) (R, float64, error) {
	var zero R
	cos := math.Cos(c.Lat * math.Pi / 180)
	steps := append(append([]float64{}, reverseSteps...), g.maxKm)
	for _, km := range steps {
		if km > g.maxKm {
			continue
		}
		if err := ctx.Err(); err != nil {
			return zero, -1, err
		}
		rows, err := inBox(place.BoxAround(c, km), cos)
		if err != nil {
			return zero, -1, err
		}
		best, bestKm := zero, -1.0
		for _, r := range rows {
			if d := dist(r); bestKm < 0 || d < bestKm {
				best, bestKm = r, d
			}
		}
		// Only a row within the box's radius is surely the nearest: one outside
		// the circle may be beaten by a row outside the box.
		if bestKm >= 0 && bestKm <= km {
			return best, bestKm, nil
		}
	}
	return zero, -1, nil
}

// ThreeWords implements ThreeWordProvider from the stored three-word addresses.
func (g *Gazetteer) ThreeWords(ctx context.Context, w place.ThreeWords) (*place.Location, error) {
	p, found, err := g.store.PlaceByThreeWords(ctx, string(w))
	if err != nil {
		return nil, apierr.Internal(err)
	}
	if found {
		return placeLocation(p), nil
	}
	pc, found, err := g.store.PostcodeByThreeWords(ctx, string(w))
	if err != nil {
		return nil, apierr.Internal(err)
	}
	if found {
		return postcodeLocation(pc), nil
	}
	return nil, apierr.NotFound("three-word address")
}

func placeResult(r placeRow) place.SearchResult {
	res := place.SearchResult{ID: placeIDPrefix + r.ID, Type: place.TypeAddress, Text: r.Name, Description: place.JoinNonEmpty(r.RegionName, r.CountryName), Source: SourceGazetteer}
	if r.Postcodes > 0 {
		res.Type = place.TypeLocality
		res.Description += " - " + place.Plural(r.Postcodes, "postcode", "postcodes")
	}
	return res
}

func postcodeResult(r postcodeRow) place.SearchResult {
	res := place.SearchResult{ID: postcodeIDPrefix + r.ID, Type: place.TypeAddress, Text: r.Code, Source: SourceGazetteer}
	if r.IsDistrict && r.Children > 0 {
		res.Type = place.TypePostcode
		res.Description = place.JoinNonEmpty(r.PlaceName, r.RegionName) + " - " + place.Plural(r.Children, "address", "addresses")
		return res
	}
	res.Description = place.JoinNonEmpty(r.PlaceName, r.RegionName, r.CountryName)
	return res
}

func placeLocation(r placeRow) *place.Location {
	return &place.Location{
		ThreeWordAddress: deref(r.ThreeWords),
		Address: place.Address{
			Name: r.Name, City: r.Name, Region: r.RegionName, RegionISO: r.RegionISO,
			CountryName: r.CountryName, CountryISO: r.CountryISO,
		},
		Coordinates: place.Coordinates{Lat: r.Lat, Lon: r.Lon},
	}
}

func postcodeLocation(r postcodeRow) *place.Location {
	return &place.Location{
		ThreeWordAddress: deref(r.ThreeWords),
		Address: place.Address{
			Name: r.PlaceName, City: r.PlaceName, Region: r.RegionName, RegionISO: r.RegionISO,
			Postcode: r.Code, CountryName: r.CountryName, CountryISO: r.CountryISO,
		},
		Coordinates: place.Coordinates{Lat: r.Lat, Lon: r.Lon},
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
