package listings

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBoundingBoxHoldsTheCircle checks the prefilter never loses a point that
// the exact test would keep: random centres everywhere (poles and the
// antimeridian included), random radii, random points near the centre.
func TestBoundingBoxHoldsTheCircle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	inBox := func(b box, lat, lon float64) bool {
		if lat < b.MinLat || lat > b.MaxLat {
			return false
		}
		// The longitude band of the point is one of the box's (what the
		// search indexes seek), or the box holds every longitude.
		if ranges, ok := b.lonBands(); ok {
			band, in := lonBand(lon), false
			for _, r := range ranges {
				in = in || (band >= r[0] && band <= r[1])
			}
			if !in {
				return false
			}
		} else if !b.AllLon {
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
	kept, total := 0, 0
	for i := 0; i < 20000; i++ {
		lat, lon := rng.Float64()*180-90, rng.Float64()*360-180
		if i%10 == 0 {
			lon = 179.5 + rng.Float64()*0.5 // next to the antimeridian
		}
		if i%15 == 0 {
			lat = 89 + rng.Float64() // next to the north pole
		}
		km := math.Pow(10, rng.Float64()*4) // 1 m... 10000 km
		b := boundingBox(lat, lon, km)
		if b.MinLat > lat || b.MaxLat < lat || !inBox(b, lat, lon) {
			t.Fatalf("the centre (%v, %v) is outside its own box %+v", lat, lon, b)
		}
		for j := 0; j < 20; j++ {
			// Points spread around the centre at up to twice the radius.
			spread := km / EarthRadiusKm * 180 / math.Pi * 2
			plat := math.Max(-90, math.Min(90, lat+(rng.Float64()*2-1)*spread))
			// Wrapped into [-180, 180) whatever the spread (math.Mod keeps the sign).
			plon := math.Mod(math.Mod(lon+(rng.Float64()*2-1)*spread*3+180, 360)+360, 360) - 180
			total++
			if HaversineKm(lat, lon, plat, plon) <= km {
				kept++
				if !inBox(b, plat, plon) {
					t.Fatalf("(%v, %v) is %v km from (%v, %v), within %v km, but outside the box %+v",
						plat, plon, HaversineKm(lat, lon, plat, plon), lat, lon, km, b)
				}
			}
		}
	}
	if kept < total/10 {
		t.Fatalf("only %d of %d points within the radius: the test does not test much", kept, total)
	}
}

func TestHaversineKm(t *testing.T) {
	cases := []struct {
		name                   string
		lat1, lon1, lat2, lon2 float64
		want, tolerance        float64
	}{
		{"same point", 54.2325, -1.3434, 54.2325, -1.3434, 0, 1e-9},
		// One degree of latitude on the sphere: R·π/180.
		{"one degree north", 52, -2, 53, -2, EarthRadiusKm * math.Pi / 180, 1e-9},
		{"antipodes", 0, 0, 0, 180, EarthRadiusKm * math.Pi, 1e-6},
		{"across the antimeridian", 0, 179.5, 0, -179.5, EarthRadiusKm * math.Pi / 180, 1e-9},
		// London (51.5074, -0.1278) to Dublin (53.3498, -6.2603): about 463 km.
		{"London Dublin", 51.5074, -0.1278, 53.3498, -6.2603, 463.8, 1.5},
	}
	for _, c := range cases {
		if got := HaversineKm(c.lat1, c.lon1, c.lat2, c.lon2); math.Abs(got-c.want) > c.tolerance {
			t.Errorf("%s: %v km, want %v", c.name, got, c.want)
		}
	}
}

// TestCircleCoverAgreesWithTheExactTest: every point of an inner rectangle,
// its corners included, is within the circle, and every point of the box in
// a corner beyond an outer rectangle is not (random centres, poles and
// antimeridian included, radii 1 m to 10,000 km); and for a 50 km circle the
// comparisons settle most of the box, or they would not spare much.
func TestCircleCoverAgreesWithTheExactTest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	used := 0
	for i := 0; i < 20000; i++ {
		lat, lon := rng.Float64()*180-90, rng.Float64()*360-180
		if i%10 == 0 {
			lon = 179.5 + rng.Float64()*0.5
		}
		if i%15 == 0 {
			lat = 89 + rng.Float64()
		}
		km := math.Pow(10, rng.Float64()*4)
		bx := boundingBox(lat, lon, km)
		inner, outer := circleCover(lat, lon, km, bx)
		if len(inner) > 0 {
			used++
		}
		for _, in := range inner {
			for j := 0; j < 24; j++ {
				plat, plon := in.MinLat+rng.Float64()*(in.MaxLat-in.MinLat), in.MinLon+rng.Float64()*(in.MaxLon-in.MinLon)
				switch j {
				case 0, 1, 2, 3:
					plat, plon = []float64{in.MinLat, in.MaxLat}[j%2], []float64{in.MinLon, in.MaxLon}[j/2]
				}
				if d := HaversineKm(lat, lon, plat, plon); d > km {
					t.Fatalf("(%v, %v) in the inner rectangle %+v of (%v, %v) is %v km away, beyond %v km", plat, plon, in, lat, lon, d, km)
				}
			}
		}
		for _, out := range outer {
			for j := 0; j < 24; j++ {
				// A corner of the box beyond the rectangle, its inner corner included.
				plat, plon := out.MaxLat+rng.Float64()*(bx.MaxLat-out.MaxLat), out.MaxLon+rng.Float64()*(bx.MaxLon-out.MaxLon)
				if j%2 == 1 {
					plat = out.MinLat - rng.Float64()*(out.MinLat-bx.MinLat)
				}
				if j%4 >= 2 {
					plon = out.MinLon - rng.Float64()*(out.MinLon-bx.MinLon)
				}
				if j < 4 {
					plat, plon = []float64{out.MaxLat, out.MinLat}[j%2], []float64{out.MaxLon, out.MinLon}[j/2]
				}
				if d := HaversineKm(lat, lon, plat, plon); d <= km {
					t.Fatalf("(%v, %v) beyond the outer rectangle %+v of (%v, %v) is %v km away, within %v km", plat, plon, out, lat, lon, d, km)
				}
			}
		}
	}
	if used < 10000 {
		t.Fatalf("inner rectangles for only %d of 20000 circles", used)
	}
	// 50 km around York: comparisons settle most points of the box.
	bx := boundingBox(53.96, -1.08, 50)
	inner, outer := circleCover(53.96, -1.08, 50, bx)
	settled := 0
	for j := 0; j < 10000; j++ {
		plat, plon := bx.MinLat+rng.Float64()*(bx.MaxLat-bx.MinLat), bx.MinLon+rng.Float64()*(bx.MaxLon-bx.MinLon)
		for _, in := range inner {
			if in.holds(plat, plon) {
				settled++
				break
			}
		}
		for _, out := range outer {
			if (plat < out.MinLat || plat > out.MaxLat) && (plon < out.MinLon || plon > out.MaxLon) {
				settled++
				break
			}
		}
	}
	if settled < 7000 {
		t.Fatalf("comparisons settle %d of 10000 points of the 50 km box (%d inner, %d outer rectangles)", settled, len(inner), len(outer))
	}
}
