package main

import (
	"fmt"
	"net/http"
	"time"
)

type demoStep = struct {
	name string
	fn   func() (string, error)
}

// moduleSteps are the Livestock and Logistics parts of the sample.
func (d *demo) moduleSteps() []demoStep {
	return []demoStep{{"loads", d.loads}, {"listings", d.listings}}
}

// demoLoad is one haulage job of the sample: commodity ids are the GB items of
// the reference data (1 wheat, 2 barley, 4 oilseed rape, 5 beans).
type demoLoad struct {
	ref, pickup, dropoff string
	commodity            int
	tonnes               float64
	daysAhead            int
	state                string // upcoming, in-transit, completed
}

var demoLoads = []demoLoad{
	{"HF-2026-101", "LD3 0SU", "SA31 3EP", 1, 29.0, 3, "upcoming"},
	{"HF-2026-102", "LD3 0SU", "HR4 9QS", 2, 28.5, 1, "in-transit"},
	{"HF-2026-103", "LD2 3NG", "CH5 2QR", 4, 27.8, -4, "completed"},
	{"HF-2026-104", "LD2 3NG", "NP20 2UR", 5, 26.0, -9, "completed"},
	{"HF-2026-105", "SY21 7EG", "SA31 3EP", 1, 29.2, 10, "upcoming"},
}

func (d *demo) loads() (string, error) {
	states := map[string]int{}
	for _, l := range demoLoads {
		date := time.Now().UTC().AddDate(0, 0, l.daysAhead).Format(time.DateOnly)
		var load struct {
			ID string `json:"id"`
		}
		body := map[string]any{
			"organiserId": demoFarmer.OrgID, "organiserName": demoFarmer.OrgName, "commodityId": l.commodity,
			"reference": l.ref, "deliveryDateISO": date, "weight": l.tonnes, "weightNet": nil,
			"files": nil, "tags": []string{"demo", "harvest-2026"}, "pickupPostcode": l.pickup, "dropoffPostcode": l.dropoff,
		}
		if err := d.call(http.MethodPost, "/logistics/v1/loads", demoFarmer, body, &load); err != nil {
			return "", err
		}
		if l.state != "upcoming" {
			if err := d.call(http.MethodPost, "/logistics/v1/loads/send-to-carrier", demoFarmer,
				[]map[string]any{{"loadId": load.ID, "carrierId": demoHaul.OrgID}}, nil); err != nil {
				return "", err
			}
			if err := d.call(http.MethodPost, "/logistics/v1/loads/send-to-driver", demoHaul,
				[]map[string]any{{"loadId": load.ID, "driverId": demoDriver.UserID}}, nil); err != nil {
				return "", err
			}
		}
		if l.state == "completed" {
			if err := d.call(http.MethodPost, "/logistics/v1/loads/"+load.ID+"/proof-of-delivery", demoDriver, map[string]any{
				"weightNet": l.tonnes - 0.3, "ticketNumber": "WB-" + l.ref[len(l.ref)-3:], "vehicleRegistration": "CU70 HGV",
				"files": []any{demoFiles["ticket"]},
			}, nil); err != nil {
				return "", err
			}
		}
		states[l.state]++
	}
	return fmt.Sprintf("%d upcoming, %d in transit, %d completed", states["upcoming"], states["in-transit"], states["completed"]), nil
}

func (d *demo) listings() (string, error) {
	return "", fmt.Errorf("livestock listings are not wired yet")
}
