package main

import (
	"net/http"
	"testing"

	"github.com/agritrade/api/logistics"
	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
	"github.com/uptrace/bun"
)

// The System module is the catalogue Logistics reads commodities from.
var _ logistics.Commodities = (*system.Module)(nil)

// TestLogisticsReadsSystemCommodities runs the modules as buildModules wires
// them: Logistics asks the System module's seeded reference data for the
// commodity of a load (its name and default weight unit).
func TestLogisticsReadsSystemCommodities(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := testkit.NewServer(t, db, func(p *app.Platform) []module.Module { return buildModules(p) })
		organiser := auth.Principal{UserID: "u-1", Name: "Ann Smith", OrgID: "org-1", OrgName: "Smith Farms", Orgs: []string{"org-1"}}
		form := map[string]any{
			"organiserId": "org-1", "organiserName": "Smith Farms", "commodityId": 2, "reference": "W-1",
			"deliveryDateISO": "2026-08-14", "weight": 29.2, "weightNet": nil, "files": nil, "tags": []string{},
		}
		r := s.Do(testkit.Request{Method: http.MethodPost, Path: "/logistics/v1/loads", Token: s.Token(organiser), JSON: form})
		if r.Status != http.StatusOK {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		var l struct {
			Commodity struct {
				ID   int
				Name string
			}
			Weight struct {
				Name       string
				Conversion float64
				Weight     float64
			}
		}
		r.Decode(t, &l)
		if l.Commodity.ID != 2 || l.Commodity.Name != "Barley" || l.Weight.Name != "tonne" || l.Weight.Conversion != 1000 || l.Weight.Weight != 29.2 {
			t.Fatalf("load %s", r.Body)
		}
		form["commodityId"], form["reference"] = 424242, "W-2"
		r = s.Do(testkit.Request{Method: http.MethodPost, Path: "/logistics/v1/loads", Token: s.Token(organiser), JSON: form})
		if r.Status != http.StatusBadRequest || r.Error(t).Validation[0].Path != "commodityId" {
			t.Fatalf("unknown commodity: %d %s", r.Status, r.Body)
		}
	})
}
