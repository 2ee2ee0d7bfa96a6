package listings_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agritrade/api/livestock"
	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// Principals of the suites: a farmer who is a member of two organisations, a
// second and third trader, and a caller without a current organisation.
var (
	farmer   = testkit.Farmer
	outsider = testkit.Outsider
	trader   = auth.Principal{UserID: "user-trader", Name: "Tom Trader", OrgID: "org-trade", OrgName: "Trade Co", Orgs: []string{"org-trade"}}
	dealer   = auth.Principal{UserID: "user-dealer", Name: "Dee Dealer", OrgID: "org-deal", OrgName: "Deal Ltd", Orgs: []string{"org-deal"}}
	// farmHand belongs to the farm's organisation through the orgs claim only.
	farmHand = auth.Principal{UserID: "user-hand", Name: "Harry Hand", OrgID: "org-contract", OrgName: "Contract Co", Orgs: []string{"org-contract", "org-farm"}}
	noOrg    = auth.Principal{UserID: "user-none", Name: "Nina None"}
	admin    = testkit.Admin
)

func newServer(t testing.TB, db *bun.DB) *testkit.Server {
	t.Helper()
	return testkit.NewServer(t, db, func(p *app.Platform) []module.Module {
		return []module.Module{livestock.New(p.Deps(livestock.Name))}
	})
}

// unauthorised is the error code of 401 answers.
var unauthorised = string(apierr.CodeUnauthorized)

// createPath maps a kind to its create route.
var createPath = map[string]string{
	"sheep": "/livestock/v1/listings/sheep", "cattle": "/livestock/v1/listings/cattle",
	"working-dog": "/livestock/v1/listings/working-dogs", "feed": "/livestock/v1/listings/feed",
	"bedding": "/livestock/v1/listings/bedding",
}

// location of a place by name, with its coordinates.
func location(city, postcode string, lat, lon float64) map[string]any {
	return map[string]any{
		"threeWordAddress": "filled.count.soap",
		"address": map[string]any{"name": "Home Farm", "line1": "1 Farm Lane", "line2": "", "line3": "", "city": city,
			"region": "North Yorkshire", "regionISO": "GB-NYK", "postcode": postcode, "countryName": "United Kingdom", "countryISO": "GB"},
		"coordinates": map[string]any{"lat": lat, "lon": lon},
	}
}

func price(amount float64) map[string]any {
	return map[string]any{"type": "fixed", "pricePerUnit": map[string]any{"amount": amount, "currency": "GBP"},
		"minPrice": nil, "maxPrice": nil}
}

// validBody answers a complete, valid create body of a kind.
func validBody(kind string) map[string]any {
	b := map[string]any{
		"type": "selling", "isDraft": false, "location": location("Thirsk", "YO7 1AA", 54.2325, -1.3434),
		"price": price(120), "files": nil, "description": "Good sort, well grown", "tags": []string{"spring", "homebred"},
	}
	switch kind {
	case "sheep":
		b["categoryIds"] = []int{1, 101, 150}
		b["properties"] = map[string]any{"breedType": "texel", "breedSociety": "Texel Sheep Society", "type": []string{"store"},
			"additionalInfo": []string{"pedigree", "named-sire"}, "sexes": "ewes", "health": map[string]any{"data": "Vaccinated against clostridial diseases"}}
	case "cattle":
		b["categoryIds"] = []int{2, 203, 252}
		b["properties"] = map[string]any{"type": "stores", "breedType": "limousin", "breedSociety": "British Limousin Cattle Society",
			"additionalInfo": []string{"organic"}, "sexes": "steers", "quantity": 12, "societyNumber": "UK123456", "minAge": 14, "maxAge": 18,
			"health": map[string]any{"tbStatus": "officially-tb-free", "tbDetails": "Clear test 2026-09-01", "tbInterval": "four-yearly", "data": "Wormed"},
			"performance": map[string]any{"averageWeight": map[string]any{"name": "kg", "conversion": 1, "weight": 480},
				"dailyLiveWeightGain": map[string]any{"name": "kg", "conversion": 1, "weight": 1.1}}}
	case "working-dog":
		b["categoryIds"] = []int{3, 301}
		b["properties"] = map[string]any{"breedType": "border-collie", "sex": "female",
			"registration": map[string]any{"dateOfBirth": "2024-03-01", "isRegistered": true, "registrationNumber": "ISDS 312345", "name": "Fly"}}
	case "feed":
		b["categoryIds"] = []int{4, 400, 401}
	case "bedding":
		b["categoryIds"] = []int{5, 500, 501}
	}
	return b
}

// with returns a copy of body with members replaced.
func with(body map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range body {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// create posts a body and answers the new id, failing the test otherwise.
func create(t *testing.T, s *testkit.Server, p auth.Principal, kind string, body map[string]any) string {
	t.Helper()
	r := s.Do(testkit.Request{Method: http.MethodPost, Path: createPath[kind], Token: s.Token(p), JSON: body})
	if r.Status != http.StatusOK {
		t.Fatalf("create %s: %d %s", kind, r.Status, r.Body)
	}
	var c struct{ Status, Message, ID string }
	r.Decode(t, &c)
	if c.Status != "success" || c.ID == "" {
		t.Fatalf("create answer %s", r.Body)
	}
	return c.ID
}

// listing is the API shape of a listing, as the tests read it.
type listing struct {
	ID               string          `json:"id"`
	UserID           string          `json:"userId"`
	OrganisationID   string          `json:"organisationId"`
	OrganisationName string          `json:"organisationName"`
	Kind             string          `json:"kind"`
	Type             string          `json:"type"`
	Status           string          `json:"status"`
	CategoryIDs      []int           `json:"categoryIds"`
	Location         json.RawMessage `json:"location"`
	Price            json.RawMessage `json:"price"`
	Files            []filestore.Ref `json:"files"`
	Description      string          `json:"description"`
	Tags             []string        `json:"tags"`
	Properties       json.RawMessage `json:"properties"`
	CreatedAtUTC     string          `json:"createdAtUTC"`
	UpdatedAtUTC     string          `json:"updatedAtUTC"`
	DistanceKm       *float64        `json:"distanceKm"`
	IsWishlisted     bool            `json:"isWishlisted"`
}

func get(t *testing.T, s *testkit.Server, p auth.Principal, id string) (int, listing) {
	t.Helper()
	r := s.Do(testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/listings/" + id, Token: s.Token(p)})
	var l listing
	if r.Status == http.StatusOK {
		r.Decode(t, &l)
	}
	return r.Status, l
}

// search runs a search and answers the listings and X-Total-Count.
func search(t *testing.T, s *testkit.Server, p auth.Principal, q url.Values) ([]listing, int) {
	t.Helper()
	r := s.Do(testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/listings?" + q.Encode(), Token: s.Token(p)})
	if r.Status != http.StatusOK {
		t.Fatalf("search %s: %d %s", q.Encode(), r.Status, r.Body)
	}
	var out []listing
	r.Decode(t, &out)
	var total int
	if _, err := fmt.Sscan(r.Header.Get("X-Total-Count"), &total); err != nil {
		t.Fatalf("X-Total-Count %q: %v", r.Header.Get("X-Total-Count"), err)
	}
	return out, total
}

func ids(ls []listing) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.ID
	}
	return out
}

// wantPaths asserts that an error body lists exactly these validation paths.
func wantPaths(t *testing.T, r *testkit.Response, want ...string) {
	t.Helper()
	if r.Status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %s", r.Status, r.Body)
	}
	e := r.Error(t)
	if e.Code != "validation_failed" {
		t.Fatalf("code %s, want validation_failed: %s", e.Code, r.Body)
	}
	got := e.Paths()
	sort.Strings(got)
	want = slices.Clone(want)
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("validation paths\n got %v\nwant %v\nbody %s", got, want, r.Body)
	}
}

// upload stores a real file through the platform's file store for p.
func upload(t *testing.T, s *testkit.Server, p auth.Principal, name string) filestore.Ref {
	t.Helper()
	rec, err := s.Platform.Files.Put(context.Background(), &p, filestore.PutInput{
		Bucket: filestore.BucketFiles, Type: "misc", Name: name, OrganisationID: p.OrgID,
		Body: strings.NewReader("Health plan for the flock, signed by the vet.\n"),
	})
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	return rec.Ref()
}

// countRows counts the listings stored, whatever their status.
func countRows(t *testing.T, db *bun.DB) int {
	t.Helper()
	n, err := db.NewSelect().TableExpr("livestock_listings").Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}
