package listings

import (
	"math"

	"github.com/agritrade/api/platform/geo"
)

// EarthRadiusKm is the mean Earth radius (IUGG) the great-circle distances use.
const EarthRadiusKm = geo.EarthRadiusKm

// HaversineKm is the great-circle distance between two WGS 84 points, in km.
// The SQL of the search computes the same formula (store.go: distanceSQL).
func HaversineKm(lat1, lon1, lat2, lon2 float64) float64 {
	return geo.DistanceKm(geo.Coordinates{Lat: lat1, Lon: lon1}, geo.Coordinates{Lat: lat2, Lon: lon2})
}

// box is the latitude/longitude rectangle that holds every point within a
// distance of a centre: the prefilter the indexes on lat and lon can serve
// before the exact great-circle test.
type box struct {
	MinLat, MaxLat float64
	MinLon, MaxLon float64
	// AllLon: the circle reaches a pole (or is huge), every longitude qualifies.
	AllLon bool
	// WrapLon: the range crosses the antimeridian; it is lon >= MinLon OR lon <= MaxLon.
	WrapLon bool
}

// holds tells whether the point lies in the box: the very conditions the
// search's WHERE puts on l.lat and l.lon (Store.where), so that matching can
// leave out a saved search whose box excludes a listing without asking the
// database (it would answer the same).
func (b box) holds(lat, lon float64) bool {
	if lat < b.MinLat || lat > b.MaxLat {
		return false
	}
	switch {
	case b.AllLon:
		return true
	case b.WrapLon:
		return lon >= b.MinLon || lon <= b.MaxLon
	default:
		return lon >= b.MinLon && lon <= b.MaxLon
	}
}

// boundingBox computes the rectangle around (lat, lon) with radius km, after
// J. Matuschek, "Finding Points Within a Distance of a Latitude/Longitude Using
// Bounding Coordinates": the longitude half-width at latitude φ for angular
// radius r is asin(sin r / cos φ). A small margin absorbs rounding, since the
// exact test follows.
func boundingBox(lat, lon, km float64) box {
	const margin = 1e-9
	rad := math.Pi / 180
	r := km / EarthRadiusKm
	phi, lambda := lat*rad, lon*rad
	minPhi, maxPhi := phi-r, phi+r
	if r >= math.Pi || minPhi <= -math.Pi/2 || maxPhi >= math.Pi/2 {
		return box{MinLat: math.Max(minPhi/rad, -90) - margin, MaxLat: math.Min(maxPhi/rad, 90) + margin, MinLon: -180, MaxLon: 180, AllLon: true}
	}
	s := math.Sin(r) / math.Cos(phi)
	if s >= 1 {
		return box{MinLat: minPhi/rad - margin, MaxLat: maxPhi/rad + margin, MinLon: -180, MaxLon: 180, AllLon: true}
	}
	dLambda := math.Asin(s)
	b := box{MinLat: minPhi/rad - margin, MaxLat: maxPhi/rad + margin, MinLon: (lambda-dLambda)/rad - margin, MaxLon: (lambda+dLambda)/rad + margin}
	switch {
	case b.MinLon < -180:
		b.MinLon += 360
		b.WrapLon = true
	case b.MaxLon > 180:
		b.MaxLon -= 360
		b.WrapLon = true
	}
	return b
}

// The circle test of a search around a point (SQLite) is the haversine term
// of every row of the box against its bound (withinSQL): five math functions
// and ten arithmetic steps a row, a quarter of the CPU of a 50 km search when
// half of the box's rows took it. Most rows are settled by comparisons
// instead: a row inside one of the inner rectangles is within the circle
// (the cross they make holds ~80% of it), a row in a corner of the box
// beyond an outer rectangle is not; only those near the circle's edge take
// the test. Each rectangle gives a share of the bound to the latitude and the
// rest to the longitude, and keeps a margin of a twentieth of the bound, so
// that rounding can never make a comparison disagree with the exact test.
var (
	innerShares = []float64{0.5, 0.8, 0.2}
	outerShares = []float64{0.5, 0.8, 0.2}
)

const (
	innerMargin = 0.95 // an inner rectangle's haversine term is at most this share of the bound
	outerMargin = 1.05 // beyond an outer rectangle, at least this share
)

// circleCover answers the inner and the outer rectangles of the circle of km
// around (lat, lon) whose box is bx (boundingBox): a point within any inner
// rectangle is within the circle; a point of the box outside an outer
// rectangle's latitude range and outside its longitude range (in a corner of
// the box) is not. None for a circle reaching a pole or the antimeridian, or
// of half the Earth, where longitude differences are not what they seem.
func circleCover(lat, lon, km float64, bx box) (inner, outer []box) {
	t := withinBound(km)
	if t >= 1 || km <= 0 || bx.AllLon || bx.WrapLon {
		return nil, nil
	}
	for _, share := range innerShares {
		if in, ok := innerRect(lat, lon, t, share); ok {
			inner = append(inner, in)
		}
	}
	for _, share := range outerShares {
		if out, ok := outerRect(lat, lon, t, share, bx); ok {
			outer = append(outer, out)
		}
	}
	return inner, outer
}

// innerRect is a rectangle around (lat, lon) whose haversine term is at most
// innerMargin of the bound t: share of it to the latitude (|Δφ| ≤ a), the
// rest to the longitude at the largest cos φ of the rectangle.
func innerRect(lat, lon, t, share float64) (box, bool) {
	rad := math.Pi / 180
	latPart := share * innerMargin * t
	a := 2 * math.Asin(math.Sqrt(latPart)) // |Δφ| ≤ a: sin²(Δφ/2) ≤ latPart
	phi := lat * rad
	lo, hi := phi-a, phi+a
	if lo <= -math.Pi/2 || hi >= math.Pi/2 {
		return box{}, false
	}
	maxCos := 1.0 // the equator is within
	switch {
	case lo > 0:
		maxCos = math.Cos(lo)
	case hi < 0:
		maxCos = math.Cos(hi)
	}
	s := (1 - share) * innerMargin * t / (math.Cos(phi) * maxCos)
	if s >= 1 {
		return box{}, false
	}
	b := 2 * math.Asin(math.Sqrt(s)) // |Δλ| ≤ b: cos φ0 cos φ sin²(Δλ/2) ≤ the rest
	in := box{MinLat: lat - a/rad, MaxLat: lat + a/rad, MinLon: lon - b/rad, MaxLon: lon + b/rad}
	if in.MinLon < -180 || in.MaxLon > 180 {
		return box{}, false
	}
	return in, true
}

// outerRect is a rectangle around (lat, lon) such that a point of the box bx
// with |Δφ| at least its latitude half-height and |Δλ| at least its
// longitude half-width has a haversine term of at least outerMargin of the
// bound t: share of it from the latitude, the rest from the longitude at the
// smallest cos φ of the box. false when no point of the box can be that far
// in longitude.
func outerRect(lat, lon, t, share float64, bx box) (box, bool) {
	rad := math.Pi / 180
	latPart := share * outerMargin * t
	if latPart >= 1 {
		return box{}, false
	}
	a := 2 * math.Asin(math.Sqrt(latPart)) // |Δφ| ≥ a: sin²(Δφ/2) ≥ latPart
	// cos is concave on (-90°, 90°): its least over the box's latitudes is at an end.
	minCos := math.Min(math.Cos(bx.MinLat*rad), math.Cos(bx.MaxLat*rad))
	s := (1 - share) * outerMargin * t / (math.Cos(lat*rad) * minCos)
	if minCos <= 0 || s >= 1 {
		return box{}, false
	}
	b := 2 * math.Asin(math.Sqrt(s)) // |Δλ| ≥ b: cos φ0 cos φ sin²(Δλ/2) ≥ the rest
	out := box{MinLat: lat - a/rad, MaxLat: lat + a/rad, MinLon: lon - b/rad, MaxLon: lon + b/rad}
	if out.MinLon < -180 || out.MaxLon > 180 {
		return box{}, false
	}
	return out, true
}

// The search indexes key the location on its longitude band,
// lonBand(lon), ahead of the latitude (migrations 0007 and 0008): a circle's
// box is then read as a few short latitude ranges, one per band it spans,
// instead of its whole latitude band around the world. A power of two keeps
// lon * lonBandsPerDegree exact in floating point, so the databases and Go
// agree on every band.
const lonBandsPerDegree = 2

// lonBand is the band of a longitude: lon * lonBandsPerDegree truncated
// toward zero, as SQLite's CAST and PostgreSQL's trunc compute it (half-degree
// bands, the one around the prime meridian a degree wide). Truncation, not
// floor: a function in an index expression costs every SQLite insert a
// statement journal (migration 0008), a cast does not.
func lonBand(lon float64) float64 { return math.Trunc(lon * lonBandsPerDegree) }

// lonBandSQL is the band expression of the search indexes, spelled as in the
// migration of the dialect so that the database matches the query to the index.
func lonBandSQL(pg bool) string {
	if pg {
		return "trunc(l.lon * 2)"
	}
	return "CAST(l.lon * 2 AS INTEGER)"
}

// maxLonBands caps the bands a search lists: a wider box reads the bands as
// one range (as wide boxes read most of the index anyway).
const maxLonBands = 24

// lonBands answers the longitude bands the box spans, as the ranges of
// consecutive bands [lo, hi] (two when it crosses the antimeridian), and
// false when every longitude qualifies (the box holds a pole). lonBand never
// decreases with the longitude, so a range's ends bound every band within.
func (b box) lonBands() ([][2]float64, bool) {
	if b.AllLon {
		return nil, false
	}
	if b.WrapLon {
		return [][2]float64{{lonBand(b.MinLon), lonBand(180)}, {lonBand(-180), lonBand(b.MaxLon)}}, true
	}
	return [][2]float64{{lonBand(b.MinLon), lonBand(b.MaxLon)}}, true
}
