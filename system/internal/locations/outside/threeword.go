package outside

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/system/internal/locations/place"
)

// ThreeWordService is the adapter of the three-word address service (its v3
// API: convert-to-coordinates and convert-to-3wa). The words give a point;
// the address of that point comes from the primary provider.
type ThreeWordService struct {
	base    string
	key     string
	address place.Provider
	o       *Client
	pace    *pacer
}

// NewThreeWordService builds the adapter; address fills in the address of
// the points it resolves. The key travels in the X-Api-Key header, so it never
// appears in URLs or logs.
func NewThreeWordService(base, key string, address place.Provider, o *Client) *ThreeWordService {
	// The service meters by quota, not by rate: requests are not spaced.
	return &ThreeWordService{base: strings.TrimRight(base, "/"), key: key, address: address, o: o, pace: newPacer(0, 0)}
}

// threeWordSquare is the service's answer to both conversions.
type threeWordSquare struct {
	Country string `json:"country"`
	Square  struct {
		Southwest threeWordPoint `json:"southwest"`
		Northeast threeWordPoint `json:"northeast"`
	} `json:"square"`
	NearestPlace string         `json:"nearestPlace"`
	Coordinates  threeWordPoint `json:"coordinates"`
	Words        string         `json:"words"`
	Language     string         `json:"language"`
	Map          string         `json:"map"`
}

type threeWordPoint struct {
	Lng float64 `json:"lng"`
	Lat float64 `json:"lat"`
}

// threeWordError is the service's error body.
type threeWordError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// ThreeWords implements ThreeWordProvider: the square's centre and the
// address of the place there. An address the service does not know answers
// 404; when the primary provider knows nothing near, the address holds the
// country and the service's nearest place only.
func (t *ThreeWordService) ThreeWords(ctx context.Context, w place.ThreeWords) (*place.Location, error) {
	var sq threeWordSquare
	err := t.o.cached("threeword:coords:"+string(w), &sq, func() error {
		return t.fetch(ctx, "/v3/convert-to-coordinates", url.Values{"words": {string(w)}}, &sq)
	})
	if err != nil {
		return nil, err
	}
	c := place.Coordinates{Lat: sq.Coordinates.Lat, Lon: sq.Coordinates.Lng}
	loc, err := t.address.Reverse(ctx, c)
	if err != nil {
		if !apierr.IsCode(err, apierr.CodeNotFound) {
			return nil, err
		}
		country := strings.ToUpper(sq.Country)
		loc = &place.Location{Address: place.Address{Name: sq.NearestPlace, CountryISO: country, CountryName: place.CountryName(country)}}
	}
	loc.Coordinates = c
	loc.ThreeWordAddress = sq.Words
	if loc.ThreeWordAddress == "" {
		loc.ThreeWordAddress = string(w)
	}
	return loc, nil
}

// WordsAt implements ThreeWordNamer.
func (t *ThreeWordService) WordsAt(ctx context.Context, c place.Coordinates) (place.ThreeWords, error) {
	v := url.Values{"coordinates": {strconv.FormatFloat(c.Lat, 'f', 6, 64) + "," + strconv.FormatFloat(c.Lon, 'f', 6, 64)}, "language": {"en"}}
	var sq threeWordSquare
	err := t.o.cached("threeword:words:"+v.Encode(), &sq, func() error {
		return t.fetch(ctx, "/v3/convert-to-3wa", v, &sq)
	})
	if err != nil {
		return "", err
	}
	return place.ThreeWords(sq.Words), nil
}

func (t *ThreeWordService) fetch(ctx context.Context, path string, v url.Values, dst *threeWordSquare) error {
	a, err := t.o.get(ctx, t.pace, "three-word address", t.base+path+"?"+v.Encode(), http.Header{"X-Api-Key": {t.key}})
	if err != nil {
		return err
	}
	if a.status != http.StatusOK {
		var e threeWordError
		_ = json.Unmarshal(a.body, &e)
		switch e.Error.Code {
		case "BadWords", "BadCoordinates":
			return apierr.NotFound("three-word address")
		default:
			// A bad key or an exhausted quota is the operator's problem, not the
			// client's: 503, and the code for the log.
			return apierr.Unavailable(fmt.Errorf("three-word service answered %d %s: %s", a.status, e.Error.Code, e.Error.Message), "the three-word address service")
		}
	}
	return decodeAnswer("three-word address", a, dst)
}
