package loads_test

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"testing"

	lt "github.com/agritrade/api/logistics/internal/logisticstest"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// storedLoad is a load as the database holds it, read around the API so that
// a refused or misdirected write shows even where no caller could see it.
type storedLoad struct {
	ID, Creator, Organiser, Reference, Status, Pickup string
	Weight                                            *float64
}

func storedByReference(t *testing.T, db *bun.DB, reference string) []storedLoad {
	t.Helper()
	var out []storedLoad
	err := db.NewSelect().Table("logistics_loads").
		ColumnExpr("id, creator_org_id AS creator, organiser_id AS organiser, reference, status, pickup_postcode AS pickup, weight").
		Where("reference = ?", reference).OrderExpr("id").Scan(context.Background(), &out)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func countLoads(t *testing.T, db *bun.DB) int {
	t.Helper()
	n, err := db.NewSelect().Table("logistics_loads").Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func batchRequest(t *testing.T, token, csv string, fields ...string) testkit.Request {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	fw, err := w.CreateFormFile("file", "loads.csv")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write([]byte(csv))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return testkit.Request{Method: http.MethodPost, Path: loadsPath + "/batch", Token: token, Body: bytes.NewReader(b.Bytes()), ContentType: w.FormDataContentType()}
}

// TestReferenceSpaceBelongsToCreator is the hole of issue 11: a carrier that
// records a load naming another organisation as organiser, with that
// organisation's reference, must neither block the organisation's own create
// of the reference nor have its load changed by the organisation's batch rows;
// and the organisation's writes must never reach the carrier's load.
func TestReferenceSpaceBelongsToCreator(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		carrierForm := map[string]any{
			"organisationId": lt.Organiser.OrgID, "organisationName": lt.Organiser.OrgName,
			"carrierId": lt.Carrier.OrgID, "carrierName": lt.Carrier.OrgName, "commodityId": lt.Wheat,
			"reference": "GRN-1", "deliveryDateISO": "2026-08-01", "weight": 28, "tags": []string{}, "pickupPostcode": "HL1 1AA",
		}
		r := s.Do(testkit.Request{Method: http.MethodPost, Path: loadsPath + "/carrier", Token: s.Token(lt.Carrier), JSON: carrierForm})
		if r.Status != http.StatusOK {
			t.Fatalf("carrier form naming the organiser: %d %s", r.Status, r.Body)
		}
		var byCarrier lt.Load
		r.Decode(t, &byCarrier)

		// The organiser's own create of the same reference is not blocked.
		own := lt.Create(t, s, lt.Organiser, lt.LoadForm("GRN-1"))[0]
		if own.ID == byCarrier.ID {
			t.Fatal("the organiser's create answered the carrier's load")
		}
		// Its own reference space still refuses a second use, and so does the carrier's.
		r = s.Do(testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: s.Token(lt.OrganiserMate), JSON: lt.LoadForm("GRN-1")})
		if r.Status != http.StatusConflict {
			t.Fatalf("the organiser's second GRN-1: %d %s", r.Status, r.Body)
		}
		r = s.Do(testkit.Request{Method: http.MethodPost, Path: loadsPath + "/carrier", Token: s.Token(lt.Carrier), JSON: carrierForm})
		if r.Status != http.StatusConflict {
			t.Fatalf("the carrier's second GRN-1 for the organiser: %d %s", r.Status, r.Body)
		}

		// The organiser's batch rows update its own load only: the carrier's
		// load keeps its weight and pickup, and nothing new is created.
		res := s.Do(batchRequest(t, s.Token(lt.Organiser), "organiserId,organiserName,commodityId,reference,deliveryDateISO,weight,pickupPostcode\n"+
			"org-grain,Grain Co,1,GRN-1,2026-08-01,31,PE9 9ZZ\n"))
		if res.Status != http.StatusOK {
			t.Fatalf("batch: %d %s", res.Status, res.Body)
		}
		var out struct {
			Success int `json:"success"`
			Results []struct {
				ID      string `json:"id"`
				Summary string `json:"summary"`
			} `json:"results"`
		}
		res.Decode(t, &out)
		if out.Success != 1 || out.Results[0].ID != own.ID || out.Results[0].Summary != "load GRN-1 updated" {
			t.Fatalf("batch row: %s", res.Body)
		}
		stored := storedByReference(t, db, "GRN-1")
		if len(stored) != 2 {
			t.Fatalf("loads with GRN-1: %+v", stored)
		}
		for _, l := range stored {
			switch l.ID {
			case byCarrier.ID:
				if l.Creator != lt.Carrier.OrgID || l.Organiser != lt.Organiser.OrgID || *l.Weight != 28 || l.Pickup != "HL1 1AA" {
					t.Errorf("the carrier's load changed: %+v", l)
				}
			case own.ID:
				if l.Creator != lt.Organiser.OrgID || *l.Weight != 31 || l.Pickup != "PE9 9ZZ" {
					t.Errorf("the organiser's load was not updated: %+v", l)
				}
			default:
				t.Errorf("unexpected load %+v", l)
			}
		}

		// A batch row whose reference only the carrier's load uses creates the
		// organiser's own load beside it.
		r = s.Do(testkit.Request{Method: http.MethodPost, Path: loadsPath + "/carrier", Token: s.Token(lt.Carrier), JSON: with(carrierForm, "reference", "GRN-2")})
		if r.Status != http.StatusOK {
			t.Fatalf("carrier GRN-2: %d %s", r.Status, r.Body)
		}
		res = s.Do(batchRequest(t, s.Token(lt.Organiser), "commodityId,reference,deliveryDateISO,weight\n1,GRN-2,2026-08-02,12\n"))
		res.Decode(t, &out)
		if res.Status != http.StatusOK || out.Success != 1 || out.Results[0].Summary != "load GRN-2 created" {
			t.Fatalf("batch GRN-2: %d %s", res.Status, res.Body)
		}
		if stored := storedByReference(t, db, "GRN-2"); len(stored) != 2 || stored[0].Creator == stored[1].Creator {
			t.Fatalf("loads with GRN-2: %+v", stored)
		}

		// The carrier's reference space is its own: its own load with the
		// reference it used for a customer is a different key.
		r = s.Do(testkit.Request{Method: http.MethodPost, Path: loadsPath + "/carrier", Token: s.Token(lt.Carrier), JSON: with(carrierForm, "-organisationId", nil, "-organisationName", nil)})
		if r.Status != http.StatusOK {
			t.Fatalf("the carrier's own GRN-1: %d %s", r.Status, r.Body)
		}
	})
}

// TestCreateOnlyForOwnOrganisations: a caller creates loads only for
// organisations in its token, as organiser (organiser form, batch) or as
// carrier (carrier form). A refusal is 403 and writes nothing, even in a list
// whose other items are allowed.
func TestCreateOnlyForOwnOrganisations(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		twoOrgs := auth.Principal{UserID: "u-two", Name: "Two Hats", OrgID: "org-grain", OrgName: "Grain Co", Orgs: []string{"org-grain", "org-haul"}}
		carrierForm := func(ref, carrier, organisation string) map[string]any {
			f := map[string]any{"carrierId": carrier, "carrierName": "C " + carrier, "commodityId": lt.Wheat, "reference": ref,
				"deliveryDateISO": "2026-08-01", "weight": 1, "tags": []string{}}
			if organisation != "" {
				f["organisationId"], f["organisationName"] = organisation, "O "+organisation
			}
			return f
		}
		cases := []struct {
			name   string
			p      auth.Principal
			path   string
			body   any
			status int
		}{
			{"organiser form, foreign organiser", lt.Carrier, loadsPath, lt.LoadForm("F-1"), 403},
			{"organiser form, list with one foreign organiser", lt.Organiser, loadsPath, []any{lt.LoadForm("F-2"), with(lt.LoadForm("F-3"), "organiserId", "org-haul")}, 403},
			{"carrier form, foreign carrier", lt.Organiser, loadsPath + "/carrier", carrierForm("F-4", "org-haul", ""), 403},
			{"carrier form, foreign carrier naming the caller as organiser", lt.Organiser, loadsPath + "/carrier", carrierForm("F-5", "org-haul", "org-grain"), 403},
			{"carrier form, list with one foreign carrier", lt.Carrier, loadsPath + "/carrier", []any{carrierForm("F-6", "org-haul", ""), carrierForm("F-7", "org-other", "org-haul")}, 403},
			{"organiser form, second organisation of the token", twoOrgs, loadsPath, with(lt.LoadForm("F-8"), "organiserId", "org-haul"), 200},
			{"carrier form, second organisation of the token as carrier", twoOrgs, loadsPath + "/carrier", carrierForm("F-9", "org-haul", "org-somebody"), 200},
		}
		for _, c := range cases {
			before := countLoads(t, db)
			r := s.Do(testkit.Request{Method: http.MethodPost, Path: c.path, Token: s.Token(c.p), JSON: c.body})
			if r.Status != c.status {
				t.Errorf("%s: %d %s, want %d", c.name, r.Status, r.Body, c.status)
				continue
			}
			if c.status == 403 {
				if code := r.Error(t).Code; code != "forbidden" {
					t.Errorf("%s: code %q", c.name, code)
				}
				if after := countLoads(t, db); after != before {
					t.Errorf("%s: %d loads written on a refusal", c.name, after-before)
				}
			}
		}
		// The batch form's organisationId and each row's organiserId follow the same rule.
		r := s.Do(batchRequest(t, s.Token(lt.Carrier), "commodityId,reference,deliveryDateISO\n1,B-1,2026-08-01\n", "organisationId", "org-grain", "organisationName", "Grain Co"))
		if r.Status != http.StatusForbidden {
			t.Errorf("batch for a foreign organisation: %d %s", r.Status, r.Body)
		}
		before := countLoads(t, db)
		r = s.Do(batchRequest(t, s.Token(lt.Carrier), "organiserId,organiserName,commodityId,reference,deliveryDateISO\norg-grain,Grain Co,1,B-2,2026-08-01\n"))
		if r.Status != http.StatusOK || countLoads(t, db) != before {
			t.Errorf("batch row for a foreign organiser: %d %s, %d loads written", r.Status, r.Body, countLoads(t, db)-before)
		}
	})
}
