package outside

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/system/internal/locations/place"
)

// SourceNominatim names the Nominatim adapter in results' source.
const SourceNominatim = "nominatim"

// osmID is the id of an OSM object as Nominatim's lookup takes it: the type's
// initial (node, way, relation) and the number.
var osmID = regexp.MustCompile(`^[NWR][0-9]{1,19}$`)

// Nominatim is the adapter of an OSM Nominatim server (format jsonv2).
type Nominatim struct {
	base string
	o    *Client
	pace *pacer
}

// NewNominatim builds the adapter; requests are spaced by the configured
// minimum interval (the public server allows one a second).
func NewNominatim(base string, o *Client) *Nominatim {
	return &Nominatim{base: strings.TrimRight(base, "/"), o: o, pace: newPacer(o.interval, o.maxWait)}
}

// nominatimPlace is one place of Nominatim's jsonv2 format.
type nominatimPlace struct {
	PlaceID     int64             `json:"place_id"`
	OSMType     string            `json:"osm_type"`
	OSMID       int64             `json:"osm_id"`
	Lat         string            `json:"lat"`
	Lon         string            `json:"lon"`
	Category    string            `json:"category"`
	Type        string            `json:"type"`
	AddressType string            `json:"addresstype"`
	Name        string            `json:"name"`
	DisplayName string            `json:"display_name"`
	Address     map[string]string `json:"address"`
	// Error is set instead of the rest when reverse finds nothing.
	Error string `json:"error"`
}

// Source implements Provider.
func (n *Nominatim) Source() string { return SourceNominatim }

// Owns implements Provider.
func (n *Nominatim) Owns(id string) bool { return osmID.MatchString(id) }

// Search implements Provider: every Nominatim result is an address.
func (n *Nominatim) Search(ctx context.Context, q place.SearchQuery) ([]place.SearchResult, int, error) {
	if q.Container != "" {
		return nil, 0, apierr.NotFound("container")
	}
	v := url.Values{"q": {q.Text}, "format": {"jsonv2"}, "addressdetails": {"1"}, "limit": {strconv.Itoa(min(q.Limit, 40))}, "accept-language": {"en"}}
	if q.Country != "" {
		v.Set("countrycodes", strings.ToLower(q.Country))
	}
	var out []place.SearchResult
	err := n.o.cached("nominatim:search:"+v.Encode(), &out, func() error {
		var places []nominatimPlace
		if err := n.fetch(ctx, "/search", v, &places); err != nil {
			return err
		}
		out = make([]place.SearchResult, 0, len(places))
		for _, p := range places {
			if id := p.id(); id != "" {
				out = append(out, place.SearchResult{ID: id, Type: place.TypeAddress, Text: p.title(), Description: p.rest(), Source: SourceNominatim})
			}
		}
		return nil
	})
	return out, len(out), err
}

// Resolve implements Provider through Nominatim's lookup.
func (n *Nominatim) Resolve(ctx context.Context, id string) (*place.Location, error) {
	if !osmID.MatchString(id) {
		return nil, apierr.NotFound("address")
	}
	v := url.Values{"osm_ids": {id}, "format": {"jsonv2"}, "addressdetails": {"1"}, "accept-language": {"en"}}
	var loc place.Location
	err := n.o.cached("nominatim:lookup:"+id, &loc, func() error {
		var places []nominatimPlace
		if err := n.fetch(ctx, "/lookup", v, &places); err != nil {
			return err
		}
		if len(places) == 0 {
			return apierr.NotFound("address")
		}
		loc = places[0].location()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &loc, nil
}

// Reverse implements Provider.
func (n *Nominatim) Reverse(ctx context.Context, c place.Coordinates) (*place.Location, error) {
	v := url.Values{
		"lat": {strconv.FormatFloat(c.Lat, 'f', 6, 64)}, "lon": {strconv.FormatFloat(c.Lon, 'f', 6, 64)},
		"format": {"jsonv2"}, "addressdetails": {"1"}, "zoom": {"18"}, "accept-language": {"en"},
	}
	var loc place.Location
	err := n.o.cached("nominatim:reverse:"+v.Encode(), &loc, func() error {
		var p nominatimPlace
		if err := n.fetch(ctx, "/reverse", v, &p); err != nil {
			return err
		}
		if p.Error != "" || p.id() == "" {
			return apierr.NotFound("place near these coordinates")
		}
		loc = p.location()
		return nil
	})
	if err != nil {
		return nil, err
	}
	loc.Coordinates = c
	return &loc, nil
}

func (n *Nominatim) fetch(ctx context.Context, path string, v url.Values, dst any) error {
	a, err := n.o.get(ctx, n.pace, SourceNominatim, n.base+path+"?"+v.Encode(), http.Header{})
	if err != nil {
		return err
	}
	return decodeAnswer(SourceNominatim, a, dst)
}

func (p nominatimPlace) id() string {
	if p.OSMID <= 0 || p.OSMType == "" {
		return ""
	}
	return strings.ToUpper(p.OSMType[:1]) + strconv.FormatInt(p.OSMID, 10)
}

// title is the result's main text: the name, else the first part of the
// display name (a house number and road have no name).
func (p nominatimPlace) title() string {
	if p.Name != "" {
		return p.Name
	}
	first, _, _ := strings.Cut(p.DisplayName, ",")
	return strings.TrimSpace(first)
}

// rest is the display name without its first part.
func (p nominatimPlace) rest() string {
	_, rest, _ := strings.Cut(p.DisplayName, ",")
	return strings.TrimSpace(rest)
}

func (p nominatimPlace) location() place.Location {
	a := p.Address
	first := func(keys ...string) string {
		for _, k := range keys {
			if v := strings.TrimSpace(a[k]); v != "" {
				return v
			}
		}
		return ""
	}
	addr := place.Address{
		Name:        p.title(),
		Line1:       strings.TrimSpace(first("house_number") + " " + first("road")),
		Line2:       first("neighbourhood", "suburb", "quarter"),
		City:        first("city", "town", "village", "hamlet", "municipality"),
		Postcode:    first("postcode"),
		CountryName: first("country"),
		CountryISO:  strings.ToUpper(first("country_code")),
	}
	// The county-level region (ISO3166-2-lvl6, e.g. GB-NYK) when the address
	// has one, else the state level (lvl4, e.g. GB-ENG).
	switch {
	case a["ISO3166-2-lvl6"] != "":
		addr.Region, addr.RegionISO = first("county", "state_district", "state"), a["ISO3166-2-lvl6"]
	case a["ISO3166-2-lvl4"] != "":
		addr.Region, addr.RegionISO = first("state", "county"), a["ISO3166-2-lvl4"]
	default:
		addr.Region = first("county", "state_district", "state")
	}
	lat, _ := strconv.ParseFloat(p.Lat, 64)
	lon, _ := strconv.ParseFloat(p.Lon, 64)
	return place.Location{Address: addr, Coordinates: place.Coordinates{Lat: lat, Lon: lon}}
}
