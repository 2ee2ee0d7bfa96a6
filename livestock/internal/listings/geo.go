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

// innerBox is a rectangle around (lat, lon) whose every point is within km
// of it by a wide margin: its haversine term is at most 0.9 of the bound the
// exact test compares with (withinBound), so a point in it passes that test
// whatever the rounding, and a search can keep it without the trigonometry.
// Half the bound goes to the latitude (|Δφ| ≤ a), half to the longitude at
// the largest cos φ of the rectangle. false when there is none to use: a
// circle reaching a pole or the antimeridian, or half the Earth.
func innerBox(lat, lon, km float64) (box, bool) {
	t := withinBound(km)
	if t >= 1 || km <= 0 {
		return box{}, false
	}
	rad := math.Pi / 180
	half := 0.45 * t
	a := 2 * math.Asin(math.Sqrt(half)) // |Δφ| ≤ a: sin²(Δφ/2) ≤ half
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
	s := half / (math.Cos(phi) * maxCos)
	if s >= 1 {
		return box{}, false
	}
	b := 2 * math.Asin(math.Sqrt(s)) // |Δλ| ≤ b: cos φ0 cos φ sin²(Δλ/2) ≤ half
	in := box{MinLat: lat - a/rad, MaxLat: lat + a/rad, MinLon: lon - b/rad, MaxLon: lon + b/rad}
	if in.MinLon < -180 || in.MaxLon > 180 {
		return box{}, false
	}
	return in, true
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
