package locations

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/logging"
	"github.com/agritrade/api/system/internal/locations/gazetteer"
	"github.com/agritrade/api/system/internal/locations/outside"
	"github.com/agritrade/api/system/internal/locations/place"
	"github.com/sirupsen/logrus"
)

// Provider names of locations.provider.
const (
	ProviderGazetteer = "gazetteer"
	ProviderNominatim = "nominatim"
	ProviderPhoton    = "photon"
)

// Service routes the four lookups to the configured providers.
type Service struct {
	store *gazetteer.Store
	// primary answers searches, reverse lookups and ids without a source.
	primary place.Provider
	// bySource holds every provider an id may name (the gazetteer always).
	bySource map[string]place.Provider
	// words resolves three-word addresses: the three-word service when a key
	// is configured, else the gazetteer's stored ones.
	words place.ThreeWordProvider
	// namer adds the three-word address to reverse lookups, when configured.
	namer place.ThreeWordNamer
	log   logrus.FieldLogger
}

// NewService builds the service from the locations section: locations.provider
// picks the primary provider, locations.three_word_key turns the three-word
// service on. transport carries the calls to outside services (nil: the
// default; the platform passes its tracing transport).
func NewService(lc Config, baseURL string, store *gazetteer.Store, log logrus.FieldLogger, transport http.RoundTripper) (*Service, error) {
	gaz := gazetteer.NewGazetteer(store, lc.MaxDistanceKm)
	s := &Service{store: store, primary: gaz, bySource: map[string]place.Provider{gaz.Source(): gaz}, words: gaz, log: log}
	client := outside.NewClient(lc.ClientConfig, baseURL, transport)
	switch strings.ToLower(strings.TrimSpace(lc.Provider)) {
	case "", ProviderGazetteer:
	case ProviderNominatim:
		s.primary = outside.NewNominatim(lc.NominatimURL, client)
	case ProviderPhoton:
		s.primary = outside.NewPhoton(lc.PhotonURL, client)
	default:
		return nil, fmt.Errorf("locations.provider %q: want gazetteer, nominatim or photon", lc.Provider)
	}
	s.bySource[s.primary.Source()] = s.primary
	if lc.ThreeWordKey != "" {
		tw := outside.NewThreeWordService(lc.ThreeWordURL, lc.ThreeWordKey, s.primary, client)
		s.words, s.namer = tw, tw
	}
	return s, nil
}

// Seed loads the gazetteer's seed when it is not there yet or has changed.
func (s *Service) Seed(ctx context.Context) error { return gazetteer.Seed(ctx, s.store) }

// NewImporter builds an importer of GeoNames dumps into the gazetteer.
func (s *Service) NewImporter() *gazetteer.Importer { return gazetteer.NewImporter(s.store) }

// Sources lists the provider names an address id may carry, sorted.
func (s *Service) Sources() []string {
	out := make([]string, 0, len(s.bySource))
	for k := range s.bySource {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Search answers a search: a container's content from the provider that owns
// its id, free text from the primary provider.
func (s *Service) Search(ctx context.Context, q place.SearchQuery) ([]place.SearchResult, int, error) {
	p := s.primary
	if q.Container != "" {
		p = s.owner(q.Container)
		if p == nil {
			return nil, 0, apierr.NotFound("container")
		}
	}
	started := time.Now()
	res, total, err := p.Search(ctx, q)
	// What was asked stays out of the line (addresses are personal data): its
	// length, the container and what the provider answered are enough to
	// follow a provider's behaviour.
	s.debug(ctx, p, "address search", started, err).WithFields(logrus.Fields{"textLength": len(q.Text), "country": q.Country, "container": q.Container != "", "results": len(res), "total": total}).Debug("location provider answered")
	return res, total, err
}

// debug is the entry of a provider call's debug line.
func (s *Service) debug(ctx context.Context, p place.Provider, op string, started time.Time, err error) logrus.FieldLogger {
	e := logging.Ctx(ctx, s.log).WithFields(logrus.Fields{"provider": p.Source(), "op": op, "duration": time.Since(started).String()})
	if err != nil {
		e = e.WithError(err)
	}
	return e
}

// ByAddressID resolves an address id with the provider named by source, or
// else the one that owns the id. An unknown source is a validation error.
func (s *Service) ByAddressID(ctx context.Context, id, source string) (*place.Location, error) {
	var f apierr.Fields
	f.Required("id", id)
	f.MaxLen("id", id, place.MaxTextLength)
	var p place.Provider
	if source != "" {
		var ok bool
		if p, ok = s.bySource[strings.ToLower(source)]; !ok {
			f.OneOf("source", source, s.Sources()...)
		}
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	if p == nil {
		if p = s.owner(id); p == nil {
			return nil, apierr.NotFound("address")
		}
	}
	started := time.Now()
	loc, err := p.Resolve(ctx, id)
	s.debug(ctx, p, "resolve address id", started, err).Debug("location provider answered")
	return loc, err
}

// ByCoordinates answers the location nearest a valid point, with its
// three-word address when a three-word service is configured.
func (s *Service) ByCoordinates(ctx context.Context, c place.Coordinates) (*place.Location, error) {
	started := time.Now()
	loc, err := s.primary.Reverse(ctx, c)
	s.debug(ctx, s.primary, "reverse geocode", started, err).Debug("location provider answered")
	if err != nil {
		return nil, err
	}
	if s.namer != nil && loc.ThreeWordAddress == "" {
		// The words are a bonus: an outage of the three-word service must not
		// fail the lookup.
		if w, err := s.namer.WordsAt(ctx, c); err == nil {
			loc.ThreeWordAddress = string(w)
		} else {
			logging.Ctx(ctx, s.log).WithError(err).Warn("three-word address of a point unavailable")
		}
	}
	return loc, nil
}

// ByThreeWords resolves a three-word address.
func (s *Service) ByThreeWords(ctx context.Context, raw string) (*place.Location, error) {
	w, err := place.ParseThreeWords(raw)
	if err != nil {
		return nil, err
	}
	return s.words.ThreeWords(ctx, w)
}

func (s *Service) owner(id string) place.Provider {
	if s.primary.Owns(id) {
		return s.primary
	}
	for _, name := range s.Sources() {
		if p := s.bySource[name]; p.Owns(id) {
			return p
		}
	}
	return nil
}
