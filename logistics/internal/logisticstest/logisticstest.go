// Package logisticstest holds what the Logistics module's test suites share:
// a small commodity catalogue with the ids and units of the real reference
// data, the parties of a load, and a test server running the real module.
package logisticstest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/agritrade/api/logistics"
	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// Commodity is one catalogue entry.
type Commodity struct {
	Name       string
	Unit       string
	Conversion float64
}

// Catalogue implements logistics.Commodities over a fixed map.
type Catalogue map[int]Commodity

// LookupCommodity answers an entry of the catalogue.
func (c Catalogue) LookupCommodity(_ context.Context, id int) (string, string, float64, bool, error) {
	e, ok := c[id]
	return e.Name, e.Unit, e.Conversion, ok, nil
}

// Commodity ids of the catalogue: those of the System module's reference data
// (system/internal/refdata/data/commodities.json), all weighed in tonnes.
const (
	Wheat       = 1
	Barley      = 2
	Oats        = 3
	OilseedRape = 4
	IrishWheat  = 101
	Unknown     = 999999
	Tonne       = "tonne"
	TonneKgs    = 1000
)

// Commodities is the catalogue the suites use.
var Commodities = Catalogue{
	Wheat:       {Name: "Wheat", Unit: Tonne, Conversion: TonneKgs},
	Barley:      {Name: "Barley", Unit: Tonne, Conversion: TonneKgs},
	Oats:        {Name: "Oats", Unit: Tonne, Conversion: TonneKgs},
	OilseedRape: {Name: "Oilseed rape", Unit: Tonne, Conversion: TonneKgs},
	IrishWheat:  {Name: "Wheat", Unit: Tonne, Conversion: TonneKgs},
}

// The parties of the visibility matrix: an organiser (with a second user of
// the same organisation), a carrier, a driver and an outsider. Each belongs to
// its own organisation.
var (
	Organiser     = auth.Principal{UserID: "u-grain-1", Name: "Olive Organiser", OrgID: "org-grain", OrgName: "Grain Co", Orgs: []string{"org-grain"}}
	OrganiserMate = auth.Principal{UserID: "u-grain-2", Name: "Gus Grain", OrgID: "org-grain", OrgName: "Grain Co", Orgs: []string{"org-grain"}}
	Carrier       = auth.Principal{UserID: "u-haul-1", Name: "Carl Carrier", OrgID: "org-haul", OrgName: "Haul Ltd", Orgs: []string{"org-haul"}}
	Driver        = auth.Principal{UserID: "u-drive-1", Name: "Dee Driver", OrgID: "org-drivers", OrgName: "Dee Driving", Orgs: []string{"org-drivers"}, Roles: []string{auth.RoleDriver}}
	Outsider      = testkit.Outsider
)

// NewServer runs the real module (and the platform) over db.
func NewServer(t testing.TB, db *bun.DB, opts ...testkit.Options) *testkit.Server {
	t.Helper()
	return testkit.NewServer(t, db, func(p *app.Platform) []module.Module {
		return []module.Module{logistics.New(p.Deps(logistics.Name), Commodities)}
	}, opts...)
}

// LoadForm returns a valid organiser form for the organiser's organisation.
func LoadForm(reference string) map[string]any {
	return map[string]any{
		"organiserId": Organiser.OrgID, "organiserName": Organiser.OrgName, "commodityId": Wheat,
		"reference": reference, "deliveryDateISO": "2026-11-21", "weight": 29.5, "weightNet": nil,
		"ticketNumber": "", "vehicleRegistration": "", "files": nil, "tags": []string{"harvest"},
		"pickupPostcode": "CB1 2AB", "dropoffPostcode": "PE1 1AA",
	}
}

// Load is the decoded load body.
type Load struct {
	ID        string `json:"id"`
	Reference string `json:"reference"`
	Organiser struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"organiser"`
	Carrier *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"carrier"`
	Driver *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"driver"`
	Commodity struct {
		ID   int    `json:"id"`
		Name string `json:"name"`
	} `json:"commodity"`
	DeliveryDateISO     string          `json:"deliveryDateISO"`
	PickupPostcode      string          `json:"pickupPostcode"`
	DropoffPostcode     string          `json:"dropoffPostcode"`
	Weight              *Weight         `json:"weight"`
	WeightNet           *Weight         `json:"weightNet"`
	VehicleRegistration string          `json:"vehicleRegistration"`
	TicketNumber        string          `json:"ticketNumber"`
	Status              string          `json:"status"`
	Files               json.RawMessage `json:"files"`
	Tags                []string        `json:"tags"`
	UpdatedAtUTC        string          `json:"updatedAtUTC"`
}

// Weight is the decoded weight object.
type Weight struct {
	Name       string  `json:"name"`
	Conversion float64 `json:"conversion"`
	Weight     float64 `json:"weight"`
}

// Create posts organiser forms as p and returns the created loads, failing the test otherwise.
func Create(t testing.TB, s *testkit.Server, p auth.Principal, forms ...map[string]any) []Load {
	t.Helper()
	r := s.Do(testkit.Request{Method: http.MethodPost, Path: "/logistics/v1/loads", Token: s.Token(p), JSON: forms})
	if r.Status != http.StatusOK {
		t.Fatalf("create loads: %d %s", r.Status, r.Body)
	}
	var out []Load
	r.Decode(t, &out)
	return out
}

// Send posts a hand-off (send-to-driver or send-to-carrier) as p and fails unless it answers want.
func Send(t testing.TB, s *testkit.Server, p auth.Principal, to string, body any, want int) *testkit.Response {
	t.Helper()
	r := s.Do(testkit.Request{Method: http.MethodPost, Path: "/logistics/v1/loads/send-to-" + to, Token: s.Token(p), JSON: body})
	if r.Status != want {
		t.Fatalf("send to %s: %d %s, want %d", to, r.Status, r.Body, want)
	}
	return r
}

// Get reads a load as p and returns the status and the load.
func Get(t testing.TB, s *testkit.Server, p auth.Principal, id string) (int, Load) {
	t.Helper()
	r := s.Do(testkit.Request{Method: http.MethodGet, Path: "/logistics/v1/loads/" + id, Token: s.Token(p)})
	var l Load
	if r.Status == http.StatusOK {
		r.Decode(t, &l)
	}
	return r.Status, l
}

// Search runs a search as p with a raw query string and returns the loads and X-Total-Count.
func Search(t testing.TB, s *testkit.Server, p auth.Principal, query string) ([]Load, string) {
	t.Helper()
	r := s.Do(testkit.Request{Method: http.MethodGet, Path: "/logistics/v1/loads?" + query, Token: s.Token(p)})
	if r.Status != http.StatusOK {
		t.Fatalf("search %q: %d %s", query, r.Status, r.Body)
	}
	var out []Load
	r.Decode(t, &out)
	return out, r.Header.Get("X-Total-Count")
}

// Refs lists the references of loads, for compact assertions.
func Refs(loads []Load) []string {
	out := make([]string, len(loads))
	for i, l := range loads {
		out[i] = l.Reference
	}
	return out
}

// Ref is a reference unique within a test: prefix-n.
func Ref(prefix string, n int) string { return fmt.Sprintf("%s-%04d", prefix, n) }
