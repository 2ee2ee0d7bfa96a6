package place

import (
	"context"
	"strings"

	"github.com/agritrade/api/platform/apierr"
)

// SearchQuery is a validated address search.
type SearchQuery struct {
	// Text is the free text (or, with Container, a filter of its content).
	Text string
	// Container is the id of a container result whose content is listed.
	Container string
	// Country is an ISO 3166-1 alpha-2 filter, upper case, or "".
	Country string
	// Limit and Offset page container listings; free text answers the best Limit.
	Limit, Offset int
}

// Search bounds.
const (
	DefaultLimit  = 20
	MaxLimit      = 100
	MaxOffset     = 100000
	minTextLength = 2
	MaxTextLength = 200
)

// NewSearchQuery validates the parameters of a search, reporting every
// failing one.
func NewSearchQuery(text, container, countryISO string, limit, offset int) (SearchQuery, error) {
	var f apierr.Fields
	text, container = strings.TrimSpace(text), strings.TrimSpace(container)
	if text == "" && container == "" {
		f.Add("query", "required", "is required unless id is given", nil)
	}
	if text != "" && container == "" && len([]rune(text)) < minTextLength {
		f.Add("query", "min_length", "must be at least 2 characters", map[string]any{"min": minTextLength, "actual": len([]rune(text))})
	}
	f.MaxLen("query", text, MaxTextLength)
	f.MaxLen("id", container, MaxTextLength)
	q := SearchQuery{Text: text, Container: container, Limit: limit, Offset: offset}
	if countryISO != "" {
		c, ok := CountryCode(countryISO)
		if !ok {
			f.Add("countryISO", "format", "must be an ISO 3166-1 alpha-2 code such as GB", map[string]any{"actual": Truncate(countryISO, 16)})
		}
		q.Country = c
	}
	if limit < 1 || limit > MaxLimit {
		f.Add("limit", "range", "must be between 1 and 100", map[string]any{"min": 1, "max": MaxLimit, "actual": limit})
	}
	if offset < 0 || offset > MaxOffset {
		f.Add("offset", "range", "must be between 0 and 100000", map[string]any{"min": 0, "max": MaxOffset, "actual": offset})
	}
	return q, f.Err()
}

// Provider is one source of location answers. Errors are *apierr.Error
// values: 404 when nothing matches, 503 when an outside service fails.
type Provider interface {
	// Source names the provider in results ("gazetteer", "nominatim", "photon").
	Source() string
	// Owns tells whether an address or container id comes from this provider.
	Owns(id string) bool
	// Search answers a page of results and the total they belong to.
	Search(ctx context.Context, q SearchQuery) ([]SearchResult, int, error)
	// Resolve answers the location of an address id.
	Resolve(ctx context.Context, id string) (*Location, error)
	// Reverse answers the location nearest a point.
	Reverse(ctx context.Context, c Coordinates) (*Location, error)
}

// ThreeWordProvider resolves three-word addresses.
type ThreeWordProvider interface {
	ThreeWords(ctx context.Context, w ThreeWords) (*Location, error)
}

// ThreeWordNamer finds the three-word address of a point, to complete
// reverse lookups when a three-word service is configured.
type ThreeWordNamer interface {
	WordsAt(ctx context.Context, c Coordinates) (ThreeWords, error)
}
