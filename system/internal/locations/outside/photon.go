package outside

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/system/internal/locations/place"
)

// SourcePhoton names the Photon adapter in results' source.
const SourcePhoton = "photon"

// photonID carries the OSM object and its point ("R118362@54.3280,-2.7463"):
// Photon has no lookup by id, so resolving one asks for the features at
// that point and keeps the one with the same OSM id.
var photonID = regexp.MustCompile(`^([NWR][0-9]{1,19})@(-?[0-9]{1,2}(?:\.[0-9]{1,7})?),(-?[0-9]{1,3}(?:\.[0-9]{1,7})?)$`)

// Photon is the adapter of a Photon server (komoot's OSM geocoder, GeoJSON answers).
type Photon struct {
	base string
	o    *Client
	pace *pacer
}

// NewPhoton builds the adapter.
func NewPhoton(base string, o *Client) *Photon {
	return &Photon{base: strings.TrimRight(base, "/"), o: o, pace: newPacer(o.interval, o.maxWait)}
}

// photonAnswer is Photon's GeoJSON feature collection.
type photonAnswer struct {
	Features []photonFeature `json:"features"`
}

type photonFeature struct {
	Geometry struct {
		Coordinates []float64 `json:"coordinates"` // [lon, lat]
	} `json:"geometry"`
	Properties struct {
		OSMType     string `json:"osm_type"`
		OSMID       int64  `json:"osm_id"`
		OSMKey      string `json:"osm_key"`
		OSMValue    string `json:"osm_value"`
		Type        string `json:"type"`
		Name        string `json:"name"`
		HouseNumber string `json:"housenumber"`
		Street      string `json:"street"`
		Locality    string `json:"locality"`
		District    string `json:"district"`
		City        string `json:"city"`
		County      string `json:"county"`
		State       string `json:"state"`
		Postcode    string `json:"postcode"`
		Country     string `json:"country"`
		CountryCode string `json:"countrycode"`
	} `json:"properties"`
}

// nationISO gives the ISO 3166-2 code of the UK nations, the only regions
// Photon's state names identify unambiguously.
var nationISO = map[string]string{
	"England": "GB-ENG", "Scotland": "GB-SCT", "Wales": "GB-WLS", "Northern Ireland": "GB-NIR",
}

// Source implements Provider.
func (p *Photon) Source() string { return SourcePhoton }

// Owns implements Provider.
func (p *Photon) Owns(id string) bool { return photonID.MatchString(id) }

// Search implements Provider. Photon filters no country: more results are
// asked for and filtered here.
func (p *Photon) Search(ctx context.Context, q place.SearchQuery) ([]place.SearchResult, int, error) {
	if q.Container != "" {
		return nil, 0, apierr.NotFound("container")
	}
	ask := q.Limit
	if q.Country != "" {
		ask = min(3*q.Limit, 50)
	}
	v := url.Values{"q": {q.Text}, "limit": {strconv.Itoa(ask)}, "lang": {"en"}}
	var out []place.SearchResult
	err := p.o.cached("photon:search:"+q.Country+":"+v.Encode(), &out, func() error {
		var a photonAnswer
		if err := p.fetch(ctx, "/api", v, &a); err != nil {
			return err
		}
		out = []place.SearchResult{}
		for _, f := range a.Features {
			if q.Country != "" && !strings.EqualFold(f.Properties.CountryCode, q.Country) {
				continue
			}
			if id := f.id(); id != "" && len(out) < q.Limit {
				loc := f.location()
				out = append(out, place.SearchResult{ID: id, Type: place.TypeAddress, Text: f.title(), Source: SourcePhoton,
					Description: place.JoinNonEmpty(loc.Address.City, loc.Address.Region, loc.Address.CountryName)})
			}
		}
		return nil
	})
	return out, len(out), err
}

// Resolve implements Provider: the feature with the id's OSM object among
// those Photon reverse-geocodes at the id's point.
func (p *Photon) Resolve(ctx context.Context, id string) (*place.Location, error) {
	m := photonID.FindStringSubmatch(id)
	if m == nil {
		return nil, apierr.NotFound("address")
	}
	lat, _ := strconv.ParseFloat(m[2], 64)
	lon, _ := strconv.ParseFloat(m[3], 64)
	var loc place.Location
	err := p.o.cached("photon:resolve:"+id, &loc, func() error {
		features, err := p.reverse(ctx, place.Coordinates{Lat: lat, Lon: lon}, 10)
		if err != nil {
			return err
		}
		for _, f := range features {
			if strings.HasPrefix(f.id(), m[1]+"@") {
				loc = f.location()
				return nil
			}
		}
		return apierr.NotFound("address")
	})
	if err != nil {
		return nil, err
	}
	return &loc, nil
}

// Reverse implements Provider.
func (p *Photon) Reverse(ctx context.Context, c place.Coordinates) (*place.Location, error) {
	var loc place.Location
	err := p.o.cached(fmt.Sprintf("photon:reverse:%.6f,%.6f", c.Lat, c.Lon), &loc, func() error {
		features, err := p.reverse(ctx, c, 1)
		if err != nil {
			return err
		}
		if len(features) == 0 {
			return apierr.NotFound("place near these coordinates")
		}
		loc = features[0].location()
		return nil
	})
	if err != nil {
		return nil, err
	}
	loc.Coordinates = c
	return &loc, nil
}

func (p *Photon) reverse(ctx context.Context, c place.Coordinates, limit int) ([]photonFeature, error) {
	v := url.Values{
		"lat": {strconv.FormatFloat(c.Lat, 'f', 6, 64)}, "lon": {strconv.FormatFloat(c.Lon, 'f', 6, 64)},
		"limit": {strconv.Itoa(limit)}, "lang": {"en"},
	}
	var a photonAnswer
	if err := p.fetch(ctx, "/reverse", v, &a); err != nil {
		return nil, err
	}
	return a.Features, nil
}

func (p *Photon) fetch(ctx context.Context, path string, v url.Values, dst any) error {
	a, err := p.o.get(ctx, p.pace, SourcePhoton, p.base+path+"?"+v.Encode(), http.Header{})
	if err != nil {
		return err
	}
	return decodeAnswer(SourcePhoton, a, dst)
}

func (f photonFeature) point() (place.Coordinates, bool) {
	if len(f.Geometry.Coordinates) < 2 {
		return place.Coordinates{}, false
	}
	c := place.Coordinates{Lat: f.Geometry.Coordinates[1], Lon: f.Geometry.Coordinates[0]}
	return c, c.Lat >= -90 && c.Lat <= 90 && c.Lon >= -180 && c.Lon <= 180
}

func (f photonFeature) id() string {
	c, ok := f.point()
	pr := f.Properties
	if !ok || pr.OSMID <= 0 || pr.OSMType == "" {
		return ""
	}
	return fmt.Sprintf("%s%d@%.5f,%.5f", strings.ToUpper(pr.OSMType[:1]), pr.OSMID, c.Lat, c.Lon)
}

func (f photonFeature) title() string {
	pr := f.Properties
	if pr.Name != "" {
		return pr.Name
	}
	return strings.TrimSpace(pr.HouseNumber + " " + pr.Street)
}

func (f photonFeature) location() place.Location {
	pr := f.Properties
	c, _ := f.point()
	city := pr.City
	if city == "" && (pr.OSMKey == "place") {
		city = pr.Name
	}
	region, iso := pr.County, ""
	if region == "" {
		region = pr.State
	}
	if strings.EqualFold(pr.CountryCode, "GB") && region == pr.State {
		iso = nationISO[pr.State]
	}
	return place.Location{
		Address: place.Address{
			Name: f.title(), Line1: strings.TrimSpace(pr.HouseNumber + " " + pr.Street), Line2: firstNonEmpty(pr.Locality, pr.District),
			City: city, Region: region, RegionISO: iso, Postcode: pr.Postcode,
			CountryName: pr.Country, CountryISO: strings.ToUpper(pr.CountryCode),
		},
		Coordinates: c,
	}
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
