package loads_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	lt "github.com/agritrade/api/logistics/internal/logisticstest"
	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// visibility is what one party can do with one load.
type visibility struct {
	who  auth.Principal
	sees bool
}

// checkVisible asserts, for each party, GET by id (200 or 404), the search and
// by-ids (present or left out) and the CSV search.
func checkVisible(t *testing.T, s *testkit.Server, id string, matrix []visibility) {
	t.Helper()
	for _, v := range matrix {
		st, _ := lt.Get(t, s, v.who, id)
		if (st == http.StatusOK) != v.sees || (st != http.StatusOK && st != http.StatusNotFound) {
			t.Errorf("%s GET load: %d, sees=%v", v.who.Name, st, v.sees)
		}
		found, _ := lt.Search(t, s, v.who, "limit=100")
		if slices.ContainsFunc(found, func(l lt.Load) bool { return l.ID == id }) != v.sees {
			t.Errorf("%s search: %v, sees=%v", v.who.Name, lt.Refs(found), v.sees)
		}
		r := s.Do(testkit.Request{Method: http.MethodGet, Path: loadsPath + "/by-ids?ids=" + id + ",nope", Token: s.Token(v.who)})
		if r.Status != 200 || strings.Contains(string(r.Body), id) != v.sees {
			t.Errorf("%s by-ids: %d %s, sees=%v", v.who.Name, r.Status, r.Body, v.sees)
		}
		r = s.Do(testkit.Request{Method: http.MethodGet, Path: loadsPath + "?format=csv", Token: s.Token(v.who)})
		if r.Status != 200 || strings.Contains(string(r.Body), id) != v.sees {
			t.Errorf("%s CSV search: %d, sees=%v", v.who.Name, r.Status, v.sees)
		}
	}
}

func TestVisibilityAndStateMachine(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		l := lt.Create(t, s, lt.Organiser, lt.LoadForm("VIS-1"))[0]
		other := lt.Create(t, s, lt.Organiser, lt.LoadForm("VIS-2"))[0]

		// upcoming: only the organiser's organisation.
		checkVisible(t, s, l.ID, []visibility{{lt.Organiser, true}, {lt.OrganiserMate, true}, {lt.Carrier, false}, {lt.Driver, false}, {lt.Outsider, false}})

		// Nobody but the organiser may send to a carrier; unknown or invisible loads are 404.
		toCarrier := []map[string]any{{"loadId": l.ID, "carrierId": lt.Carrier.OrgID, "carrierName": lt.Carrier.OrgName}}
		lt.Send(t, s, lt.Outsider, "carrier", toCarrier, 404)
		lt.Send(t, s, lt.Carrier, "carrier", toCarrier, 404)
		lt.Send(t, s, lt.Organiser, "carrier", []map[string]any{{"loadId": "missing", "carrierId": "org-haul"}}, 404)
		r := lt.Send(t, s, lt.OrganiserMate, "carrier", toCarrier, 200)
		if m := r.Map(t); m["status"] != "success" {
			t.Errorf("confirmation %s", r.Body)
		}
		_, got := lt.Get(t, s, lt.Organiser, l.ID)
		if got.Status != "upcoming" || got.Carrier == nil || got.Carrier.ID != "org-haul" || got.Carrier.Name != "Haul Ltd" {
			t.Fatalf("after send-to-carrier: %+v", got)
		}
		checkVisible(t, s, l.ID, []visibility{{lt.Organiser, true}, {lt.Carrier, true}, {lt.Driver, false}, {lt.Outsider, false}})
		// The carrier sees the load but may not re-send it to a carrier.
		lt.Send(t, s, lt.Carrier, "carrier", toCarrier, 403)

		// The carrier sends it to the driver: in transit, and the driver sees it.
		toDriver := []map[string]any{{"loadId": l.ID, "driverId": lt.Driver.UserID, "driverName": lt.Driver.Name}}
		lt.Send(t, s, lt.Driver, "driver", toDriver, 404)
		lt.Send(t, s, lt.Outsider, "driver", toDriver, 404)
		lt.Send(t, s, lt.Carrier, "driver", toDriver, 200)
		checkVisible(t, s, l.ID, []visibility{{lt.Organiser, true}, {lt.Carrier, true}, {lt.Driver, true}, {lt.Outsider, false}})
		_, got = lt.Get(t, s, lt.Driver, l.ID)
		if got.Status != "in-transit" || got.Driver == nil || got.Driver.ID != lt.Driver.UserID || got.Driver.Name != "Dee Driver" {
			t.Fatalf("after send-to-driver: %+v", got)
		}
		// The driver sees it but may not hand it on (403, not 404: it is no secret to them).
		lt.Send(t, s, lt.Driver, "driver", toDriver, 403)
		// Re-sending in transit re-assigns; the name already known stays when none is given.
		lt.Send(t, s, lt.Organiser, "driver", []map[string]any{{"loadId": l.ID, "driverId": lt.Driver.UserID}}, 200)
		if _, got = lt.Get(t, s, lt.Driver, l.ID); got.Driver.Name != "Dee Driver" || got.Status != "in-transit" {
			t.Fatalf("after re-send: %+v", got)
		}
		// The other load is still invisible to all but the organiser.
		checkVisible(t, s, other.ID, []visibility{{lt.Organiser, true}, {lt.Carrier, false}, {lt.Driver, false}, {lt.Outsider, false}})

		// Proof of delivery: outsiders 404; the driver completes it; a second one 409.
		pod := map[string]any{"weightNet": 28.75, "ticketNumber": "WB-5521", "vehicleRegistration": "YX21 ABC", "files": nil}
		podPath := loadsPath + "/" + l.ID + "/proof-of-delivery"
		var completed lt.Load
		s.Run(t, []testkit.Scenario{
			{Name: "pod404outsider", Req: testkit.Request{Method: http.MethodPost, Path: podPath, Token: s.Token(lt.Outsider), JSON: pod}, Status: 404, Code: "not_found"},
			{Name: "pod404unknown", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath + "/nope/proof-of-delivery", Token: s.Token(lt.Driver), JSON: pod}, Status: 404, Code: "not_found"},
			{Name: "pod200driver", Req: testkit.Request{Method: http.MethodPost, Path: podPath, Token: s.Token(lt.Driver), JSON: pod}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					r.Decode(t, &completed)
					if completed.Status != "completed" || completed.WeightNet == nil || *completed.WeightNet != (lt.Weight{Name: "tonne", Conversion: 1000, Weight: 28.75}) ||
						completed.TicketNumber != "WB-5521" || completed.VehicleRegistration != "YX21 ABC" {
						t.Errorf("completed load %s", r.Body)
					}
				}},
			{Name: "pod409second", Req: testkit.Request{Method: http.MethodPost, Path: podPath, Token: s.Token(lt.Organiser), JSON: pod}, Status: 409, Code: "conflict"},
			{Name: "pod409secondList", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath + "/proof-of-delivery", Token: s.Token(lt.Carrier), JSON: []any{with(pod, "loadId", l.ID)}}, Status: 409, Code: "conflict"},
		})
		// A completed load moves no more.
		lt.Send(t, s, lt.Organiser, "driver", toDriver, 409)
		lt.Send(t, s, lt.Organiser, "carrier", toCarrier, 409)
		checkVisible(t, s, l.ID, []visibility{{lt.Organiser, true}, {lt.Carrier, true}, {lt.Driver, true}, {lt.Outsider, false}})

		// Proof of delivery straight from upcoming, by the organiser.
		lt.Send(t, s, lt.Organiser, "carrier", []map[string]any{{"loadId": other.ID, "carrierId": "org-haul"}}, 200)
		r = s.Do(testkit.Request{Method: http.MethodPost, Path: loadsPath + "/" + other.ID + "/proof-of-delivery", Token: s.Token(lt.Carrier), JSON: with(pod, "loadId", other.ID)})
		if r.Status != 200 {
			t.Fatalf("carrier proof from upcoming: %d %s", r.Status, r.Body)
		}
	})
}

func TestHandOffValidation(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		ls := lt.Create(t, s, lt.Organiser, lt.LoadForm("HV-1"), lt.LoadForm("HV-2"))
		org := s.Token(lt.Organiser)
		invisible := lt.Create(t, s, lt.Carrier, with(lt.LoadForm("HV-3"), "organiserId", "org-haul", "organiserName", "Haul Ltd"))[0]
		s.Run(t, []testkit.Scenario{
			{Name: "driver401", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath + "/send-to-driver", JSON: []any{}}, Status: 401, Code: string(apierr.CodeUnauthorized)},
			{Name: "driver400empty", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath + "/send-to-driver", Token: org, JSON: []any{}}, Status: 400, Code: "validation_failed"},
			{Name: "driver400items", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath + "/send-to-driver", Token: org, JSON: []any{
				map[string]any{"loadId": ls[0].ID, "driverId": "d1"}, map[string]any{"loadId": ""}, map[string]any{"loadId": ls[0].ID, "driverId": "d2"},
			}}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "[1].loadId", "[1].driverId", "[2].loadId") }},
			{Name: "driver400type", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath + "/send-to-driver", Token: org, JSON: `[{"loadId":1,"driverId":"d"}]`}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "[0].loadId") }},
			{Name: "driver404allOrNothing", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath + "/send-to-driver", Token: org, JSON: []any{
				map[string]any{"loadId": ls[0].ID, "driverId": "d1"}, map[string]any{"loadId": invisible.ID, "driverId": "d1"},
			}}, Status: 404, Code: "not_found"},
			{Name: "carrier400items", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath + "/send-to-carrier", Token: org, JSON: []any{map[string]any{"loadId": ls[0].ID}}}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "[0].carrierId") }},
			{Name: "carrier400tooMany", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath + "/send-to-carrier", Token: org, JSON: manyItems(1001)}, Status: 400, Code: "validation_failed"},
			{Name: "pod400list", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath + "/proof-of-delivery", Token: org, JSON: []any{
				map[string]any{"loadId": ls[0].ID, "weightNet": 1, "ticketNumber": "t", "vehicleRegistration": "v", "files": nil},
				map[string]any{"loadId": ls[1].ID, "weightNet": -1, "vehicleRegistration": "v"},
			}}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					wantPaths(t, r, "[1].weightNet", "[1].ticketNumber", "[1].files")
				}},
			{Name: "pod404listAllOrNothing", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath + "/proof-of-delivery", Token: org, JSON: []any{
				map[string]any{"loadId": ls[0].ID, "weightNet": 1, "ticketNumber": "t", "vehicleRegistration": "v", "files": nil},
				map[string]any{"loadId": invisible.ID, "weightNet": 1, "ticketNumber": "t", "vehicleRegistration": "v", "files": nil},
			}}, Status: 404, Code: "not_found"},
			{Name: "pod400pathMismatch", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath + "/" + ls[0].ID + "/proof-of-delivery", Token: org, JSON: map[string]any{"loadId": ls[1].ID, "weightNet": 1, "vehicleRegistration": "v", "files": nil}}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "loadId", "ticketNumber") }},
			{Name: "pod400pathEmpty", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath + "/" + ls[0].ID + "/proof-of-delivery", Token: org, JSON: map[string]any{}}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					wantPaths(t, r, "weightNet", "ticketNumber", "vehicleRegistration", "files")
				}},
			{Name: "pod200list", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath + "/proof-of-delivery", Token: org, JSON: []any{
				map[string]any{"loadId": ls[1].ID, "weightNet": 2, "ticketNumber": "t2", "vehicleRegistration": "v2", "files": []any{}},
				map[string]any{"loadId": ls[0].ID, "weightNet": 1, "ticketNumber": "t1", "vehicleRegistration": "v1", "files": nil},
			}}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var got []lt.Load
					r.Decode(t, &got)
					if len(got) != 2 || got[0].ID != ls[1].ID || got[1].ID != ls[0].ID || got[0].Status != "completed" || got[1].TicketNumber != "t1" {
						t.Errorf("answer %s", r.Body)
					}
				}},
		})
		// Nothing moved for the failed all-or-nothing requests before the last one.
		if _, l := lt.Get(t, s, lt.Organiser, ls[0].ID); l.Driver != nil {
			t.Errorf("a failed send-to-driver assigned a driver: %+v", l.Driver)
		}
		if _, l := lt.Get(t, s, lt.Carrier, invisible.ID); l.Status != "upcoming" {
			t.Errorf("the invisible load changed: %+v", l)
		}
	})
}

func manyItems(n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"loadId": "x", "carrierId": "y"}
	}
	return out
}

func TestByIDs(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		ls := lt.Create(t, s, lt.Organiser, lt.LoadForm("B-1"), lt.LoadForm("B-2"), lt.LoadForm("B-3"))
		theirs := lt.Create(t, s, lt.Carrier, with(lt.LoadForm("B-4"), "organiserId", "org-haul", "organiserName", "Haul Ltd"))[0]
		path := loadsPath + "/by-ids?ids="
		many := strings.Repeat("x,", 1000) + "y"
		for i := 0; i < 1001; i++ {
			many += "," + lt.Ref("id", i)
		}
		s.Run(t, []testkit.Scenario{
			{Name: "byIds401", Req: testkit.Request{Method: http.MethodGet, Path: path + ls[0].ID}, Status: 401, Code: string(apierr.CodeUnauthorized)},
			{Name: "byIds400missing", Req: testkit.Request{Method: http.MethodGet, Path: loadsPath + "/by-ids", Token: s.Token(lt.Organiser)}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "ids") }},
			{Name: "byIds400tooMany", Req: testkit.Request{Method: http.MethodGet, Path: path + many, Token: s.Token(lt.Organiser)}, Status: 400, Code: "validation_failed"},
			{Name: "byIds200order", Req: testkit.Request{Method: http.MethodGet, Path: path + strings.Join([]string{ls[2].ID, theirs.ID, "unknown", ls[0].ID, ls[2].ID}, ","), Token: s.Token(lt.Organiser)}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var got []lt.Load
					r.Decode(t, &got)
					if !slices.Equal(lt.Refs(got), []string{"B-3", "B-1"}) || r.Header.Get("X-Total-Count") != "2" {
						t.Errorf("by-ids %v total %s", lt.Refs(got), r.Header.Get("X-Total-Count"))
					}
				}},
			{Name: "byIds200none", Req: testkit.Request{Method: http.MethodGet, Path: path + ls[0].ID, Token: s.Token(lt.Outsider)}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					if string(r.Body) != "[]" {
						t.Errorf("outsider by-ids %s", r.Body)
					}
				}},
			{Name: "get404other", Req: testkit.Request{Method: http.MethodGet, Path: loadsPath + "/" + theirs.ID, Token: s.Token(lt.Organiser)}, Status: 404, Code: "not_found"},
			{Name: "get404unknown", Req: testkit.Request{Method: http.MethodGet, Path: loadsPath + "/unknown", Token: s.Token(lt.Organiser)}, Status: 404, Code: "not_found"},
			{Name: "get401", Req: testkit.Request{Method: http.MethodGet, Path: loadsPath + "/" + ls[0].ID}, Status: 401, Code: string(apierr.CodeUnauthorized)},
		})
	})
}

// TestHandOff_200_NamesLearnedFromTheActors: send-to-carrier and
// send-to-driver take the names as optional; when they were left out, the
// carrier's own hand-off and the driver's own proof of delivery fill them in
// from their tokens, and a name already given is never overwritten.
func TestHandOff_200_NamesLearnedFromTheActors(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		ls := lt.Create(t, s, lt.Organiser, lt.LoadForm("NM-1"), lt.LoadForm("NM-2"))
		unnamed, named := ls[0], ls[1]
		lt.Send(t, s, lt.Organiser, "carrier", []map[string]any{{"loadId": unnamed.ID, "carrierId": lt.Carrier.OrgID}}, 200)
		lt.Send(t, s, lt.Organiser, "carrier", []map[string]any{{"loadId": named.ID, "carrierId": lt.Carrier.OrgID, "carrierName": "Haulage (as we call them)"}}, 200)
		if _, got := lt.Get(t, s, lt.Organiser, unnamed.ID); got.Carrier == nil || got.Carrier.Name != "" {
			t.Fatalf("carrier name before the carrier acted: %+v", got.Carrier)
		}
		for _, id := range []string{unnamed.ID, named.ID} {
			lt.Send(t, s, lt.Carrier, "driver", []map[string]any{{"loadId": id, "driverId": lt.Driver.UserID}}, 200)
		}
		_, got := lt.Get(t, s, lt.Organiser, unnamed.ID)
		if got.Carrier == nil || got.Carrier.Name != lt.Carrier.OrgName || got.Driver == nil || got.Driver.Name != "" {
			t.Fatalf("after the carrier's hand-off: carrier %+v driver %+v", got.Carrier, got.Driver)
		}
		pod := map[string]any{"weightNet": 12.5, "ticketNumber": "WB-1", "vehicleRegistration": "AB12 CDE", "files": nil}
		for _, id := range []string{unnamed.ID, named.ID} {
			if r := s.Do(testkit.Request{Method: http.MethodPost, Path: loadsPath + "/" + id + "/proof-of-delivery", Token: s.Token(lt.Driver), JSON: pod}); r.Status != 200 {
				t.Fatalf("driver's proof: %d %s", r.Status, r.Body)
			}
		}
		_, got = lt.Get(t, s, lt.Organiser, unnamed.ID)
		if got.Driver == nil || got.Driver.Name != lt.Driver.Name || got.Carrier.Name != lt.Carrier.OrgName {
			t.Fatalf("after the driver's proof: carrier %+v driver %+v", got.Carrier, got.Driver)
		}
		if _, got = lt.Get(t, s, lt.Organiser, named.ID); got.Carrier == nil || got.Carrier.Name != "Haulage (as we call them)" {
			t.Fatalf("a given carrier name was overwritten: %+v", got.Carrier)
		}
	})
}
