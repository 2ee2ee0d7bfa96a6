package geo

import (
	"math"
	"testing"
)

func TestDistanceKm(t *testing.T) {
	london := Coordinates{Lat: 51.5074, Lon: -0.1278}
	edinburgh := Coordinates{Lat: 55.9533, Lon: -3.1883}
	if d := DistanceKm(london, edinburgh); math.Abs(d-534) > 2 {
		t.Fatalf("London–Edinburgh %.1f km, want about 534", d)
	}
	if d := DistanceKm(london, london); d != 0 {
		t.Fatalf("a point to itself: %v", d)
	}
	// Antipodes: half the circumference, without NaN from rounding above 1.
	if d := DistanceKm(Coordinates{0, 0}, Coordinates{0, 180}); math.Abs(d-math.Pi*EarthRadiusKm) > 1e-6 {
		t.Fatalf("antipodes %v", d)
	}
}
