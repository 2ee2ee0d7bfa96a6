package loads_test

import (
	"net/http"
	"slices"
	"testing"

	lt "github.com/agritrade/api/logistics/internal/logisticstest"
	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

const loadsPath = "/logistics/v1/loads"

func wantPaths(t *testing.T, r *testkit.Response, want ...string) {
	t.Helper()
	got := r.Error(t).Paths()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("validation paths %v lack %q", got, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("validation paths %v, want exactly %v", got, want)
	}
}

func with(form map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range form {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil && kv[i].(string)[0] == '-' {
			delete(out, kv[i].(string)[1:])
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func TestCreateAsOrganiser(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		org := s.Token(lt.Organiser)
		form := lt.LoadForm("PO-1")
		s.Run(t, []testkit.Scenario{
			{Name: "create401", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, JSON: form}, Status: 401, Code: string(apierr.CodeUnauthorized)},
			{Name: "create400empty", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: map[string]any{}}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					wantPaths(t, r, "organiserId", "organiserName", "commodityId", "reference", "deliveryDateISO", "weight", "weightNet", "files", "tags")
					if string(r.Error(t).Body) != "{}" {
						t.Errorf("body echo %s, want {}", r.Error(t).Body)
					}
				}},
			{Name: "create400fields", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: with(form,
				"commodityId", 1.5, "deliveryDateISO", "21/11/2026", "weight", -1, "weightNet", 2e9, "tags", []string{"ok", "a;b", " "},
				"vehicleRegistration", "AB12 CDE FGH IJK LMNOP", "pickupPostcode", "CB1 2AB CB1 2AB CB1")},
				Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					wantPaths(t, r, "commodityId", "deliveryDateISO", "weight", "weightNet", "tags[1]", "tags[2]", "vehicleRegistration", "pickupPostcode")
				}},
			{Name: "create400unknownCommodity", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: with(form, "commodityId", lt.Unknown)}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					wantPaths(t, r, "commodityId")
					if c := r.Error(t).Validation[0].Code; c != "unknown" {
						t.Errorf("code %q, want unknown", c)
					}
				}},
			{Name: "create400type", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: with(form, "weight", "heavy")}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "weight") }},
			{Name: "create400malformed", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: `{"reference":`}, Status: 400, Code: "bad_request"},
			{Name: "create400notJSON", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, Body: stringsReader("reference=x"), ContentType: "application/x-www-form-urlencoded"}, Status: 400, Code: "bad_request"},
			{Name: "create400listItems", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: []any{
				lt.LoadForm("L-0"), with(form, "reference", ""), lt.LoadForm("L-2"), with(form, "commodityId", lt.Unknown, "-tags", nil),
			}}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					wantPaths(t, r, "[1].reference", "[3].commodityId", "[3].tags")
				}},
			{Name: "create400listEmpty", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: []any{}}, Status: 400, Code: "validation_failed"},
			{Name: "create400listType", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: []any{form, with(form, "weight", "x")}}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "[1].weight") }},
			{Name: "create400unknownField", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: with(form, "referance", "PO-9", "reference", "PO-9")}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					wantPaths(t, r, "referance")
					if c := r.Error(t).Validation[0].Code; c != "unknown_field" {
						t.Errorf("code %q, want unknown_field", c)
					}
				}},
			{Name: "create400unknownFieldInList", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: []any{lt.LoadForm("U-1"), with(lt.LoadForm("U-2"), "weigth", 3)}}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "[1].weigth") }},
			{Name: "create400typesAndMissingTogether", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: with(form, "weight", "heavy", "tags", "harvest", "commodityId", "wheat", "-reference", nil)}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "weight", "tags", "commodityId", "reference") }},
			{Name: "create403otherOrganiser", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: s.Token(lt.Carrier), JSON: form}, Status: 403, Code: "forbidden"},
			{Name: "create403oneItemOfOther", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: []any{lt.LoadForm("X-1"), with(form, "organiserId", "org-haul", "reference", "X-2")}}, Status: 403, Code: "forbidden"},
			{Name: "create200", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: with(form, "weightNet", 29.1, "ticketNumber", "T-77", "vehicleRegistration", "AB12 CDE", "tags", []string{"harvest", " harvest ", "wheat"})}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var l lt.Load
					r.Decode(t, &l)
					if l.ID == "" || l.Reference != "PO-1" || l.Status != "upcoming" || l.Organiser.ID != "org-grain" || l.Organiser.Name != "Grain Co" {
						t.Errorf("load %s", r.Body)
					}
					if l.Commodity.ID != lt.Wheat || l.Commodity.Name != "Wheat" {
						t.Errorf("commodity %+v", l.Commodity)
					}
					if l.Weight == nil || *l.Weight != (lt.Weight{Name: lt.Tonne, Conversion: lt.TonneKgs, Weight: 29.5}) || l.WeightNet == nil || l.WeightNet.Weight != 29.1 {
						t.Errorf("weights %+v %+v", l.Weight, l.WeightNet)
					}
					if l.Carrier != nil || l.Driver != nil || string(l.Files) != "[]" || !slices.Equal(l.Tags, []string{"harvest", "wheat"}) {
						t.Errorf("parties, files or tags: %s", r.Body)
					}
					if l.DeliveryDateISO != "2026-11-21" || l.PickupPostcode != "CB1 2AB" || l.TicketNumber != "T-77" || l.VehicleRegistration != "AB12 CDE" {
						t.Errorf("fields: %s", r.Body)
					}
				}},
			{Name: "create409sameReference", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: s.Token(lt.OrganiserMate), JSON: form}, Status: 409, Code: "conflict"},
			{Name: "create409inList", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: []any{lt.LoadForm("D-1"), lt.LoadForm("D-1")}}, Status: 409, Code: "conflict"},
			{Name: "create409listOneTaken", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: []any{lt.LoadForm("D-2"), form}}, Status: 409, Code: "conflict"},
			{Name: "create200dateTime", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: with(form, "reference", "PO-2", "deliveryDateISO", "2026-11-21T15:04:05+01:00", "weight", nil, "files", []any{}, "-pickupPostcode", nil)}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var l lt.Load
					r.Decode(t, &l)
					if l.DeliveryDateISO != "2026-11-21T14:04:05Z" || l.Weight != nil || l.PickupPostcode != "" {
						t.Errorf("load %s", r.Body)
					}
				}},
			{Name: "create200list", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: []any{lt.LoadForm("L-1"), with(lt.LoadForm("L-2"), "commodityId", lt.Barley)}}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var ls []lt.Load
					r.Decode(t, &ls)
					if len(ls) != 2 || ls[0].Reference != "L-1" || ls[1].Reference != "L-2" || ls[1].Commodity.Name != "Barley" {
						t.Errorf("loads %s", r.Body)
					}
				}},
		})
		// Nothing of the failed requests was written: only PO-1, PO-2, L-1 and L-2 exist.
		got, total := lt.Search(t, s, lt.Organiser, "sortBy=reference")
		if total != "4" || !slices.Equal(lt.Refs(got), []string{"L-1", "L-2", "PO-1", "PO-2"}) {
			t.Fatalf("loads after the scenarios: %v (total %s)", lt.Refs(got), total)
		}
	})
}

func TestCreateAsCarrier(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		carrier := s.Token(lt.Carrier)
		path := loadsPath + "/carrier"
		form := map[string]any{
			"carrierId": lt.Carrier.OrgID, "carrierName": lt.Carrier.OrgName, "commodityId": lt.OilseedRape,
			"reference": "HL-1", "deliveryDateISO": "2026-08-01", "weight": 28, "tags": []string{},
		}
		var own, forGrain lt.Load
		s.Run(t, []testkit.Scenario{
			{Name: "carrier401", Req: testkit.Request{Method: http.MethodPost, Path: path, JSON: form}, Status: 401, Code: string(apierr.CodeUnauthorized)},
			{Name: "carrier400empty", Req: testkit.Request{Method: http.MethodPost, Path: path, Token: carrier, JSON: map[string]any{}}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					wantPaths(t, r, "carrierId", "carrierName", "commodityId", "reference", "deliveryDateISO", "weight", "tags")
				}},
			{Name: "carrier400orgWithoutName", Req: testkit.Request{Method: http.MethodPost, Path: path, Token: carrier, JSON: []any{with(form, "organisationId", "org-grain")}}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "[0].organisationName") }},
			{Name: "carrier403notMember", Req: testkit.Request{Method: http.MethodPost, Path: path, Token: s.Token(lt.Organiser), JSON: form}, Status: 403, Code: "forbidden"},
			{Name: "carrier200own", Req: testkit.Request{Method: http.MethodPost, Path: path, Token: carrier, JSON: form}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					r.Decode(t, &own)
					if own.Organiser.ID != "org-haul" || own.Organiser.Name != "Haul Ltd" || own.Carrier == nil || own.Carrier.ID != "org-haul" || own.Status != "upcoming" || own.Commodity.Name != "Oilseed rape" || own.WeightNet != nil {
						t.Errorf("load %s", r.Body)
					}
				}},
			{Name: "carrier200forOrganiser", Req: testkit.Request{Method: http.MethodPost, Path: path, Token: carrier, JSON: []any{with(form, "organisationId", "org-grain", "organisationName", "Grain Co")}}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var ls []lt.Load
					r.Decode(t, &ls)
					forGrain = ls[0]
					if len(ls) != 1 || forGrain.Organiser.ID != "org-grain" || forGrain.Carrier.ID != "org-haul" {
						t.Errorf("loads %s", r.Body)
					}
				}},
			{Name: "carrier409", Req: testkit.Request{Method: http.MethodPost, Path: path, Token: carrier, JSON: form}, Status: 409, Code: "conflict"},
		})
		// The organiser sees the load recorded for it, not the carrier's own.
		if st, _ := lt.Get(t, s, lt.Organiser, forGrain.ID); st != 200 {
			t.Errorf("organiser reads the carrier's load for it: %d", st)
		}
		if st, _ := lt.Get(t, s, lt.Organiser, own.ID); st != 404 {
			t.Errorf("organiser reads the carrier's own load: %d", st)
		}
	})
}
