package listings

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/events"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/ids"
	"github.com/agritrade/api/platform/outbox"
	"github.com/gin-gonic/gin"
)

// Saved searches (listing alerts): a user keeps a search's filters under a
// name; when a listing becomes active and matches, the user gets one
// listing.alert (outbox notification and event stream) per (search, listing).
// The filters are parsed by ParseSearch and matched by Store.where: the
// search's own code, so a saved search means exactly what the search means.

// Limits of saved searches.
const (
	MaxSavedSearches = 100
	maxSavedNameLen  = 100
	// maxCells bounds the grid cells one search is indexed under; a wider
	// area is indexed as "anywhere" (still matched exactly by the filter).
	maxCells = 64
	// anyCell, anyKind and anyType index a search that does not narrow by area,
	// kind or listing type.
	anyCell = -1
	anyKey  = "*"
	// matchBatch is how many candidate searches one matching statement tests.
	matchBatch = 100
)

// EventListingAlert is the outbox and stream type of an alert.
const EventListingAlert = events.TypeListingAlert

// savedFilterKeys are the search parameters a saved search keeps: the filters,
// not the paging, format or per-viewer parts (isWishlisted, updatedSinceUTC).
var savedFilterKeys = []string{
	"f:status", "f:commodityType", "f:commodityBreed", "f:commodityBreedSociety", "f:commoditySexes",
	"f:commodityAdditionalInfo", "minAge", "maxAge", "latitude", "longitude", "distanceKm",
}

// SavedSearch is a stored search in its API shape.
type SavedSearch struct {
	ID           string                     `json:"id"`
	Name         string                     `json:"name"`
	Query        map[string]json.RawMessage `json:"query"`
	CreatedAtUTC string                     `json:"createdAtUTC"`
}

// savedInput is the create body.
type savedInput struct {
	Name  *string                    `json:"name"`
	Query map[string]json.RawMessage `json:"query"`
}

// parseSaved validates a create body: the name here, the query by the
// search's own parser, whose validation[] it answers unchanged.
func parseSaved(raw []byte) (name string, values url.Values, sr Search, err error) {
	var in savedInput
	// The platform's decoder: a wrong type is a field failure, data after
	// the value (which this once took as a second body) a bad_request.
	if err := httpx.DecodeJSON(raw, &in); err != nil {
		return "", nil, Search{}, err
	}
	var f apierr.Fields
	if in.Name != nil {
		name = strings.TrimSpace(*in.Name)
	}
	if f.Required("name", name) {
		f.MaxLen("name", name, maxSavedNameLen)
	}
	if in.Query == nil {
		f.Add("query", "required", "is required: the search's parameters", nil)
		return "", nil, Search{}, f.Err()
	}
	values = url.Values{}
	keys := make([]string, 0, len(in.Query))
	for k := range in.Query {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(savedFilterKeys, k) {
			f.Add(k, "unknown", "is not a filter a saved search keeps", map[string]any{"allowed": savedFilterKeys})
			continue
		}
		vals, ok := queryValues(in.Query[k])
		if !ok {
			f.Add(k, "type", "must be a string, a number or an array of them", nil)
			continue
		}
		values[k] = vals
	}
	if len(values) == 0 && f.Err() == nil {
		f.Add("query", "required", "must hold at least one filter", nil)
	}
	// The search's own parser: the same checks and the same validation[].
	sr, perr := ParseSearch(queryOf(values))
	if perr != nil {
		ae, ok := apierr.As(perr)
		if !ok || ae.Code != apierr.CodeValidation {
			return "", nil, Search{}, perr
		}
		f.Merge(ae.Validation)
	}
	return name, values, sr, f.Err()
}

// queryOf reads stored search parameters through the search's own query
// reader, as if they came in a request.
func queryOf(values url.Values) *httpx.Query {
	return httpx.NewQuery(&gin.Context{Request: &http.Request{URL: &url.URL{RawQuery: values.Encode()}}})
}

// queryValues turns a JSON value of the query into search parameter values.
func queryValues(raw json.RawMessage) ([]string, bool) {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		out := make([]string, 0, len(list))
		for _, item := range list {
			v, ok := scalar(item)
			if !ok {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	}
	v, ok := scalar(raw)
	if !ok {
		return nil, false
	}
	return []string{v}, true
}

func scalar(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&n) == nil {
		return n.String(), true
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return strconv.FormatBool(b), true
	}
	return "", false
}

// indexKeys answers the (kind, type, breed, cell) keys a search is found
// under: its kind or any, the listing type its status filter allows or any,
// each breed it names (as its filter compares them) or any, and the 1° grid
// cells its area covers or any. A search that keeps only closed listings
// (sold, found) never matches a newly active one: no keys.
func indexKeys(f Filter) []savedCellRow {
	typ := anyKey
	switch f.Status {
	case FilterActiveSelling:
		typ = Selling
	case FilterActiveBuying:
		typ = Buying
	case StatusSold, StatusFound:
		return nil
	}
	kind := anyKey
	if f.Kind != "" {
		kind = f.Kind
	}
	cells := []int{anyCell}
	if p := f.Near; p != nil {
		b := boundingBox(p.Lat, p.Lon, p.Km)
		if c := gridCells(b); c != nil {
			cells = c
		}
	}
	breeds := []string{anyKey}
	if len(f.Breeds) > 0 {
		breeds = slices.Compact(slices.Sorted(slices.Values(f.Breeds)))
	}
	out := make([]savedCellRow, 0, len(breeds)*len(cells))
	for _, b := range breeds {
		for _, c := range cells {
			out = append(out, savedCellRow{Kind: kind, Type: typ, Breed: b, Cell: c})
		}
	}
	return out
}

// cellOf numbers the 1° grid cell of a point.
func cellOf(lat, lon float64) int {
	la := int(math.Floor(math.Max(-90, math.Min(89.999999, lat)))) + 90
	lo := int(math.Floor(math.Max(-180, math.Min(179.999999, lon)))) + 180
	return la*360 + lo
}

// gridCells lists the cells a box covers; nil when they are too many (or the
// box wraps or spans every longitude).
func gridCells(b box) []int {
	if b.AllLon || b.WrapLon {
		return nil
	}
	minLa, maxLa := int(math.Floor(math.Max(-90, b.MinLat))), int(math.Floor(math.Min(89.999999, b.MaxLat)))
	minLo, maxLo := int(math.Floor(math.Max(-180, b.MinLon))), int(math.Floor(math.Min(179.999999, b.MaxLon)))
	if (maxLa-minLa+1)*(maxLo-minLo+1) > maxCells {
		return nil
	}
	var out []int
	for la := minLa; la <= maxLa; la++ {
		for lo := minLo; lo <= maxLo; lo++ {
			out = append(out, cellOf(float64(la), float64(lo)))
		}
	}
	return out
}

// CreateSavedSearch stores a saved search of p and answers its id.
func (s *Service) CreateSavedSearch(ctx context.Context, p *auth.Principal, raw []byte) (string, error) {
	name, values, sr, err := parseSaved(raw)
	if err != nil {
		return "", err
	}
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	queryJSON, _ := json.Marshal(body["query"])
	orgs, _ := json.Marshal(p.Organisations())
	row := savedSearchRow{
		ID: ids.New(ctx), UserID: p.UserID, Orgs: string(orgs), Name: name,
		Query: values.Encode(), Body: string(queryJSON), CreatedAt: s.now(),
	}
	keys := indexKeys(sr.Filter)
	for i := range keys {
		keys[i].SearchID = row.ID
	}
	err = s.store.InTx(ctx, func(ctx context.Context, tx *Store) error {
		n, err := tx.CountSavedSearches(ctx, p.UserID)
		if err != nil {
			return err
		}
		if n >= MaxSavedSearches {
			return apierr.Conflict("a user keeps at most %d saved searches; delete one first", MaxSavedSearches)
		}
		return tx.InsertSavedSearches(ctx, []savedSearchRow{row}, keys)
	})
	if err != nil {
		return "", err
	}
	return row.ID, nil
}

// SavedSearches answers a page of p's saved searches, newest first, and the total.
func (s *Service) SavedSearches(ctx context.Context, p *auth.Principal, limit, offset int) ([]SavedSearch, int, error) {
	rows, total, err := s.store.SavedSearches(ctx, p.UserID, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	out := make([]SavedSearch, len(rows))
	for i, r := range rows {
		out[i] = SavedSearch{ID: r.ID, Name: r.Name, Query: map[string]json.RawMessage{}, CreatedAtUTC: r.CreatedAt.UTC().Format(timeFormat)}
		_ = json.Unmarshal([]byte(r.Body), &out[i].Query)
	}
	return out, total, nil
}

// DeleteSavedSearch removes a saved search of p; another's answers 404.
func (s *Service) DeleteSavedSearch(ctx context.Context, p *auth.Principal, id string) error {
	return s.store.InTx(ctx, func(ctx context.Context, tx *Store) error {
		found, err := tx.DeleteSavedSearch(ctx, p.UserID, id)
		if err != nil {
			return err
		}
		if !found {
			return apierr.NotFound("saved search")
		}
		return nil
	})
}

// alertNewlyActive matches a listing that has just become active (in tx)
// against the other users' saved searches and records one alert per new
// (search, listing), with its notification and stream event.
func (s *Service) alertNewlyActive(ctx context.Context, tx *Store, l *Listing) (int, error) {
	matched, err := s.matchNewlyActive(ctx, tx, l)
	if err != nil {
		return 0, err
	}
	return s.alert(ctx, tx, matched, l)
}

// matchNewlyActive answers the other users' saved searches an active listing
// matches. Candidates come from the (kind, type, cell) index; each is then
// tested by the search's own filter on this one listing, in batches of one
// statement. It only reads, so it runs outside a write.
func (s *Service) matchNewlyActive(ctx context.Context, st *Store, l *Listing) ([]savedSearchRow, error) {
	cands, err := st.SavedSearchCandidates(ctx, candidateKey(l), l.UserID)
	if err != nil {
		return nil, err
	}
	return filterCandidates(ctx, st, l, cands)
}

// candidateKey is what a listing finds its candidate searches by.
func candidateKey(l *Listing) savedKey {
	k := savedKey{Kind: string(l.Kind), Type: l.Type, Cells: []int{anyCell}}
	if l.Location != nil {
		k.Cells = append(k.Cells, cellOf(l.Location.Coordinates.Lat, l.Location.Coordinates.Lon))
	}
	if l.Properties != nil {
		k.Breed = l.Properties.searchable().Breed
	}
	return k
}

// filterCandidates answers the candidates whose own filter the listing passes.
func filterCandidates(ctx context.Context, st *Store, l *Listing, cands []savedSearchRow) ([]savedSearchRow, error) {
	var matched []savedSearchRow
	for start := 0; start < len(cands); start += matchBatch {
		batch := cands[start:min(start+matchBatch, len(cands))]
		m, err := matching(ctx, st, l, batch)
		if err != nil {
			return nil, err
		}
		matched = append(matched, m...)
	}
	return matched, nil
}

// matching answers which of the searches the listing matches: each search
// parsed by the search's own parser, tested in one statement.
func matching(ctx context.Context, st *Store, l *Listing, cands []savedSearchRow) ([]savedSearchRow, error) {
	tests := make([]savedTest, 0, len(cands))
	byID := map[string]savedSearchRow{}
	for _, c := range cands {
		values, err := url.ParseQuery(c.Query)
		if err != nil {
			continue
		}
		sr, err := ParseSearch(queryOf(values))
		if err != nil {
			// Stored searches were valid when saved; one the search no longer
			// accepts matches nothing rather than failing the listing.
			continue
		}
		if p := sr.Near; p != nil {
			// A search around a point matches only listings in its bounding box
			// (the WHERE's first test of lat and lon): one outside it, or without
			// a location, is left out here rather than tested by the database.
			if l.Location == nil || !boundingBox(p.Lat, p.Lon, p.Km).holds(l.Location.Coordinates.Lat, l.Location.Coordinates.Lon) {
				continue
			}
		}
		var orgs []string
		_ = json.Unmarshal([]byte(c.Orgs), &orgs)
		tests = append(tests, savedTest{SearchID: c.ID, Viewer: Viewer{UserID: c.UserID, Orgs: orgs}, Filter: sr.Filter})
		byID[c.ID] = c
	}
	hits, err := st.MatchingSearches(ctx, l.ID, tests)
	if err != nil {
		return nil, err
	}
	out := make([]savedSearchRow, 0, len(hits))
	for _, id := range hits {
		out = append(out, byID[id])
	}
	return out, nil
}

// alert records one alert per matched search unless (search, listing)
// already had one, with their outbox notifications and stream events, in a
// few multi-row statements; it answers how many were new.
func (s *Service) alert(ctx context.Context, tx *Store, matched []savedSearchRow, l *Listing) (int, error) {
	if len(matched) == 0 {
		return 0, nil
	}
	now := s.now()
	rows := make([]alertRow, len(matched))
	byID := make(map[string]savedSearchRow, len(matched))
	for i, c := range matched {
		rows[i] = alertRow{SearchID: c.ID, ListingID: l.ID, CreatedAt: now}
		byID[c.ID] = c
	}
	fresh, err := tx.RecordAlerts(ctx, rows)
	if err != nil {
		return 0, err
	}
	notes := make([]outbox.Event, 0, len(fresh))
	evs := make([]events.Event, 0, len(fresh))
	for _, id := range fresh {
		c := byID[id]
		data := map[string]any{"savedSearchId": c.ID, "savedSearchName": c.Name, "listingId": l.ID, "kind": l.Kind, "type": l.Type}
		notes = append(notes, outbox.Event{
			Type: EventListingAlert, Recipients: []string{c.UserID},
			Subject: "New listing for your search " + c.Name,
			Body:    fmt.Sprintf("A new %s listing (%s) matches your saved search %q: %s", l.Kind, l.Type, c.Name, l.ID),
			Data:    data,
		})
		evs = append(evs, events.Event{Type: events.TypeListingAlert, Audiences: []string{events.User(c.UserID)}, Data: data})
	}
	if err := tx.EnqueueAll(ctx, notes); err != nil {
		return 0, err
	}
	return len(fresh), tx.AppendEvents(ctx, evs)
}
