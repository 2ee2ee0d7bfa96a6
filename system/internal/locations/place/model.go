// Package place is the vocabulary of the locations feature, shared by its
// providers and its gazetteer: search queries and results, the Provider
// interfaces, coordinates and boxes, three-word addresses, and the parsing and
// normalising of names, country codes and postcodes. It imports nothing of
// the feature.
package place

import (
	"fmt"
	"github.com/agritrade/api/platform/geo"
	"math"
	"regexp"
	"strings"
	"unicode"

	"github.com/agritrade/api/platform/apierr"
	"golang.org/x/text/language"
	"golang.org/x/text/language/display"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// Result types of an address search.
const (
	// TypeAddress is a result that location-by-address-id resolves.
	TypeAddress = "address"
	// TypePostcode is a postcode district: its id lists the full postcodes in it.
	TypePostcode = "postcode"
	// TypeLocality is a town or village: its id lists its postcode districts.
	TypeLocality = "locality"
)

// The seed's location resource, shared with the other modules through the platform.

// Address is the postal address of a location.
type Address = geo.Address

// Coordinates is a WGS 84 point.
type Coordinates = geo.Coordinates

// Location is a three-word address, a postal address and a point.
type Location = geo.Location

// SearchResult is one answer of an address search.
type SearchResult struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Text        string `json:"text"`
	Description string `json:"description"`
	Source      string `json:"source"`
}

// NewCoordinates validates a point, reporting every field out of range under
// the given names (query parameters "lat"/"lon").
func NewCoordinates(lat, lon float64, f *apierr.Fields) Coordinates {
	if math.IsNaN(lat) || lat < -90 || lat > 90 {
		f.Add("lat", "range", "must be between -90 and 90", map[string]any{"min": -90, "max": 90, "actual": lat})
	}
	if math.IsNaN(lon) || lon < -180 || lon > 180 {
		f.Add("lon", "range", "must be between -180 and 180", map[string]any{"min": -180, "max": 180, "actual": lon})
	}
	return Coordinates{Lat: lat, Lon: lon}
}

// DistanceKm is the great-circle (haversine) distance between two points.
func DistanceKm(a, b Coordinates) float64 { return geo.DistanceKm(a, b) }

// Box is a latitude/longitude rectangle that contains every point within a
// distance of its centre: the cheap prefilter of nearest-place queries.
type Box struct {
	MinLat, MaxLat, MinLon, MaxLon float64
}

// BoxAround returns the rectangle around c that holds the circle of radius km.
// Near the poles the longitude span becomes the whole circle.
func BoxAround(c Coordinates, km float64) Box {
	dLat := km / geo.EarthRadiusKm * 180 / math.Pi
	b := Box{MinLat: math.Max(-90, c.Lat-dLat), MaxLat: math.Min(90, c.Lat+dLat), MinLon: -180, MaxLon: 180}
	cos := math.Cos(c.Lat * math.Pi / 180)
	if cos > 1e-6 {
		dLon := dLat / cos
		if dLon < 180 {
			b.MinLon = math.Max(-180, c.Lon-dLon)
			b.MaxLon = math.Min(180, c.Lon+dLon)
		}
	}
	return b
}

// ThreeWords is a well-formed three-word address: three words of letters
// joined by dots, lower case ("apple.meadow.tractor").
type ThreeWords string

// threeWordsPattern accepts letters of any script, as three-word services
// support many languages; a leading "///" (how such addresses are printed) is
// stripped before matching.
var threeWordsPattern = regexp.MustCompile(`^\p{L}+\.\p{L}+\.\p{L}+$`)

// ParseThreeWords validates a three-word address. Malformed input answers a
// validation error on the "query" parameter.
func ParseThreeWords(s string) (ThreeWords, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "///")
	// Full-width and ideographic dots are how some keyboards type the separator.
	s = strings.NewReplacer("｡", ".", "。", ".", "．", ".").Replace(s)
	s = strings.ToLower(s)
	if len(s) > 200 || !threeWordsPattern.MatchString(s) {
		var f apierr.Fields
		f.Add("query", "format", "must be three words joined by dots, e.g. apple.meadow.tractor", map[string]any{"actual": Truncate(s, 64)})
		return "", f.Err()
	}
	return ThreeWords(s), nil
}

// CountryCode validates an ISO 3166-1 alpha-2 code, answering it upper case.
func CountryCode(s string) (string, bool) {
	s = strings.ToUpper(strings.TrimSpace(s))
	if len(s) != 2 || s[0] < 'A' || s[0] > 'Z' || s[1] < 'A' || s[1] > 'Z' {
		return "", false
	}
	return s, true
}

// CountryName is the English name of an ISO 3166-1 alpha-2 code, or the code
// itself when it names no country.
func CountryName(iso string) string {
	if r, err := language.ParseRegion(iso); err == nil && r.IsCountry() {
		if n := display.English.Regions().Name(r); n != "" {
			return n
		}
	}
	return iso
}

// newFold returns a transformer that removes accents (é → e), so that
// "Dun Laoghaire" finds "Dún Laoghaire". Chained transformers keep state, so
// each call gets its own: one shared by goroutines corrupts its buffers.
func newFold() transform.Transformer {
	return transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
}

// Normalize is the search form of a name: lower case, accents removed, every
// run of other characters than letters and digits one space, trimmed. It is
// the only form stored in and compared with the name_norm columns: letters,
// digits and single spaces, nothing a prefix range or a wildcard could trip on.
func Normalize(s string) string {
	// Bytes that are not UTF-8 separate words like any other non-letter. They
	// are replaced before folding: the fold's transformers fail on them, which
	// left accents in ("\xf7ǽ" gave "ǽ", whose own form is "æ"). Lower case
	// comes first too, since lowering may add accents (İ → i̇) for the fold to remove.
	s = strings.ToLower(strings.ToValidUTF8(s, " "))
	if folded, _, err := transform.String(newFold(), s); err == nil {
		s = folded
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
			continue
		}
		space = true
	}
	return b.String()
}

// Postcode is a parsed postcode.
type Postcode struct {
	// Country is the ISO country the format belongs to ("" when unknown).
	Country string
	// Norm is the code upper case without spaces: "SW1A1AA".
	Norm string
	// Display is the printed form: "SW1A 1AA".
	Display string
	// District is the outward code or routing key ("SW1A", "D02") when Norm is a
	// full postcode of a hierarchical system, else "".
	District string
	// IsDistrict tells that Norm itself is an outward code or routing key.
	IsDistrict bool
}

const ukArea = `(?:[BEGLMNSW]|[A-PR-UWYZ][A-HK-Y])`

var (
	// ukFull and ukOutward follow the UK format: outward code (area, district
	// digit, optional digit or letter) and inward code (digit, two letters).
	// Areas of one letter are only B, E, G, L, M, N, S and W, which keeps
	// Eircode routing keys such as D02 or T12 apart.
	ukFull    = regexp.MustCompile(`^(` + ukArea + `[0-9][A-Z0-9]?)([0-9][A-Z]{2})$`)
	ukOutward = regexp.MustCompile(`^` + ukArea + `[0-9][A-Z0-9]?$`)
	// ukPartial is a prefix of a UK postcode: an area, then at least a digit.
	ukPartial = regexp.MustCompile(`^` + ukArea + `[0-9][A-Z0-9]?([0-9][A-Z]{0,2})?$`)
	// ieFull and ieRouting follow Eircodes: a routing key (letter, two digits,
	// or D6W) and a four-character unique identifier.
	ieFull    = regexp.MustCompile(`^([AC-FHKNPRTV-Y][0-9]{2}|D6W)([0-9AC-FHKNPRTV-Y]{4})$`)
	ieRouting = regexp.MustCompile(`^([AC-FHKNPRTV-Y][0-9]{2}|D6W)$`)
)

// PostcodeNorm is the compared form of a postcode: upper case, letters and
// digits only.
func PostcodeNorm(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ParsePostcode reads a postcode of a country ("" guesses GB, then IE).
// ok is false when the text is no postcode of that country's format; other
// countries' codes are accepted as they are, without hierarchy.
func ParsePostcode(country, s string) (Postcode, bool) {
	n := PostcodeNorm(s)
	if n == "" || len(n) > 12 {
		return Postcode{}, false
	}
	switch country {
	case "GB", "":
		if m := ukFull.FindStringSubmatch(n); m != nil {
			return Postcode{Country: "GB", Norm: n, Display: m[1] + " " + m[2], District: m[1]}, true
		}
		if ukOutward.MatchString(n) {
			return Postcode{Country: "GB", Norm: n, Display: n, IsDistrict: true}, true
		}
		if country == "GB" {
			return Postcode{}, false
		}
		fallthrough
	case "IE":
		if m := ieFull.FindStringSubmatch(n); m != nil {
			return Postcode{Country: "IE", Norm: n, Display: m[1] + " " + m[2], District: m[1]}, true
		}
		if ieRouting.MatchString(n) {
			return Postcode{Country: "IE", Norm: n, Display: n, IsDistrict: true}, true
		}
		return Postcode{}, false
	default:
		return Postcode{Country: country, Norm: n, Display: strings.ToUpper(strings.TrimSpace(s))}, true
	}
}

// LooksLikePostcode tells whether free text should be searched as a postcode
// (or the start of one): "SW1A 1AA", "sw1a1aa", "SW1A", "SW1", "D02 X285".
func LooksLikePostcode(s string) bool {
	if strings.ContainsFunc(s, func(r rune) bool {
		return !(r == ' ' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'))
	}) {
		return false
	}
	n := PostcodeNorm(s)
	if len(n) < 2 || len(n) > 8 {
		return false
	}
	return ukPartial.MatchString(n) || ieRouting.MatchString(n) || ieFull.MatchString(n) ||
		(len(n) > 3 && ieRouting.MatchString(n[:3]) && len(n) <= 7)
}

// WithinOneEdit tells whether a and b differ by at most one insertion,
// deletion, substitution or transposition of adjacent letters (the typos of
// one letter that search tolerates).
func WithinOneEdit(a, b string) bool {
	ra, rb := []rune(a), []rune(b)
	if len(ra) < len(rb) {
		ra, rb = rb, ra
	}
	switch len(ra) - len(rb) {
	case 0:
		diff := -1
		for i := range ra {
			if ra[i] == rb[i] {
				continue
			}
			if diff >= 0 {
				// A second difference is fine only as the other half of a swap.
				return diff == i-1 && ra[diff] == rb[i] && ra[i] == rb[diff] && string(ra[i+1:]) == string(rb[i+1:])
			}
			diff = i
		}
		return true
	case 1:
		i := 0
		for i < len(rb) && ra[i] == rb[i] {
			i++
		}
		return string(ra[i+1:]) == string(rb[i:])
	default:
		return false
	}
}

// PrefixWithinOneEdit tells whether some prefix of name is within one edit of
// q: the user typed the start of a name with one typo.
func PrefixWithinOneEdit(q, name string) bool {
	rq, rn := []rune(q), []rune(name)
	for _, l := range []int{len(rq) - 1, len(rq), len(rq) + 1} {
		if l >= 1 && l <= len(rn) && WithinOneEdit(q, string(rn[:l])) {
			return true
		}
	}
	return false
}

// OneEditVariants lists every string one edit away from s over the alphabet
// of normalised names (used to look up short names exactly).
func OneEditVariants(s string) []string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz "
	r := []rune(s)
	seen := map[string]bool{s: true}
	var out []string
	add := func(v []rune) {
		str := strings.TrimSpace(string(v))
		if str != "" && !seen[str] {
			seen[str] = true
			out = append(out, str)
		}
	}
	for i := range r {
		add(append(append([]rune{}, r[:i]...), r[i+1:]...))
		if i+1 < len(r) {
			v := append([]rune{}, r...)
			v[i], v[i+1] = v[i+1], v[i]
			add(v)
		}
		for _, c := range alphabet {
			if c != r[i] {
				v := append([]rune{}, r...)
				v[i] = c
				add(v)
			}
		}
	}
	for i := 0; i <= len(r); i++ {
		for _, c := range alphabet {
			v := append(append(append([]rune{}, r[:i]...), c), r[i:]...)
			add(v)
		}
	}
	return out
}

// Truncate cuts s to n runes (for quoting outside input in messages).
func Truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// Plural renders "1 address", "12 addresses".
func Plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// JoinNonEmpty joins the non-empty parts with ", ".
func JoinNonEmpty(parts ...string) string {
	out := parts[:0:0]
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ", ")
}
