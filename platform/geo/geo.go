// Package geo holds the seed's Location resource, which several modules carry
// (System's lookups answer it, Livestock's listings store it), and the
// great-circle distance they measure with.
package geo

import "math"

// Address is the postal address of a location; every field is a string, empty
// when unknown.
type Address struct {
	Name        string `json:"name"`
	Line1       string `json:"line1"`
	Line2       string `json:"line2"`
	Line3       string `json:"line3"`
	City        string `json:"city"`
	Region      string `json:"region"`
	RegionISO   string `json:"regionISO"`
	Postcode    string `json:"postcode"`
	CountryName string `json:"countryName"`
	CountryISO  string `json:"countryISO"`
}

// Coordinates is a WGS 84 point in degrees.
type Coordinates struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// Location is the seed's location: a three-word address, a postal address and a point.
type Location struct {
	ThreeWordAddress string      `json:"threeWordAddress"`
	Address          Address     `json:"address"`
	Coordinates      Coordinates `json:"coordinates"`
}

// EarthRadiusKm is the mean Earth radius (IUGG) of every great-circle distance.
const EarthRadiusKm = 6371.0088

// DistanceKm is the great-circle (haversine) distance between two points, in km.
func DistanceKm(a, b Coordinates) float64 {
	const rad = math.Pi / 180
	dLat := (b.Lat - a.Lat) * rad
	dLon := (b.Lon - a.Lon) * rad
	h := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(a.Lat*rad)*math.Cos(b.Lat*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * EarthRadiusKm * math.Asin(math.Min(1, math.Sqrt(h)))
}
