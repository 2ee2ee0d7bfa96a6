package loads_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	lt "github.com/agritrade/api/logistics/internal/logisticstest"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// backdate moves every load's last change to a fixed past time, so that a
// catch-up from a later instant sees exactly what the test changes next.
func backdate(t *testing.T, db *bun.DB, table string) {
	t.Helper()
	if _, err := db.NewUpdate().Table(table).Set("updated_at = ?", time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)).
		Where("1 = 1").Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
}

const since2021 = "updatedSinceUTC=2021-01-01T00:00:00Z"

func TestUpdatedSince(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		made := lt.Create(t, s, lt.Organiser, lt.LoadForm("SINCE-1"), lt.LoadForm("SINCE-2"), lt.LoadForm("SINCE-3"))
		backdate(t, db, "logistics_loads")
		if got, total := lt.Search(t, s, lt.Organiser, since2021); len(got) != 0 || total != "0" {
			t.Fatalf("nothing changed since 2021, got %v (%s)", lt.Refs(got), total)
		}
		// SINCE-3 goes to a carrier, then SINCE-1 to a driver and is delivered.
		lt.Send(t, s, lt.Organiser, "carrier", []map[string]any{{"loadId": made[2].ID, "carrierId": lt.Carrier.OrgID, "carrierName": lt.Carrier.OrgName}}, 200)
		lt.Send(t, s, lt.Organiser, "driver", []map[string]any{{"loadId": made[0].ID, "driverId": lt.Driver.UserID, "driverName": lt.Driver.Name}}, 200)
		r := s.Do(testkit.Request{Method: http.MethodPost, Path: loadsPath + "/" + made[0].ID + "/proof-of-delivery", Token: s.Token(lt.Driver),
			JSON: map[string]any{"weightNet": 28.5, "ticketNumber": "T-1", "vehicleRegistration": "AB12 CDE", "files": nil}})
		if r.Status != http.StatusOK {
			t.Fatalf("proof of delivery: %d %s", r.Status, r.Body)
		}

		// The organiser: both changed loads, oldest change first, with their state.
		got, total := lt.Search(t, s, lt.Organiser, since2021)
		if !slices.Equal(lt.Refs(got), []string{"SINCE-3", "SINCE-1"}) || total != "2" {
			t.Fatalf("organiser catch-up %v (%s), want [SINCE-3 SINCE-1]", lt.Refs(got), total)
		}
		if got[1].Status != "completed" || got[1].UpdatedAtUTC < "2021" || got[0].UpdatedAtUTC > got[1].UpdatedAtUTC {
			t.Fatalf("catch-up rows %+v", got)
		}
		// Each party sees only the changed loads it may see.
		for _, c := range []struct {
			who  string
			refs []string
			got  []lt.Load
		}{
			{"carrier", []string{"SINCE-3"}, first(lt.Search(t, s, lt.Carrier, since2021))},
			{"driver", []string{"SINCE-1"}, first(lt.Search(t, s, lt.Driver, since2021))},
			{"outsider", []string{}, first(lt.Search(t, s, lt.Outsider, since2021))},
			{"other sort", []string{"SINCE-1", "SINCE-3"}, first(lt.Search(t, s, lt.Organiser, since2021+"&sortBy=reference"))},
			{"newest first", []string{"SINCE-1", "SINCE-3"}, first(lt.Search(t, s, lt.Organiser, since2021+"&sortDesc=true"))},
			{"with a filter", []string{"SINCE-1"}, first(lt.Search(t, s, lt.Organiser, since2021+"&f:status=completed"))},
			{"later", []string{}, first(lt.Search(t, s, lt.Organiser, "updatedSinceUTC="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)))},
		} {
			if !slices.Equal(lt.Refs(c.got), c.refs) {
				t.Errorf("%s: %v, want %v", c.who, lt.Refs(c.got), c.refs)
			}
		}

		tok := s.Token(lt.Organiser)
		s.Run(t, []testkit.Scenario{
			{Name: "malformed400", Req: testkit.Request{Method: http.MethodGet, Path: loadsPath + "?updatedSinceUTC=yesterday&limit=0", Token: tok}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantFields(t, r, "limit", "updatedSinceUTC") }},
			{Name: "dateOnly400", Req: testkit.Request{Method: http.MethodGet, Path: loadsPath + "?updatedSinceUTC=2021-01-01", Token: tok}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantFields(t, r, "updatedSinceUTC") }},
			{Name: "csv200", Req: testkit.Request{Method: http.MethodGet, Path: loadsPath + "?format=csv&" + since2021, Token: tok}, Status: 200},
		})
	})
}

func first(l []lt.Load, _ string) []lt.Load {
	if l == nil {
		return []lt.Load{}
	}
	return l
}

// wantFields asserts the validation paths of a 400, in any order.
func wantFields(t *testing.T, r *testkit.Response, want ...string) {
	t.Helper()
	got := r.Error(t).Paths()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("validation paths %v, want %v: %s", got, want, r.Body)
	}
}

// TestLoadUpdatedEvents: every hand-off and proof of delivery writes a
// load.updated event in its transaction, for the organiser's and carrier's
// members and the driver (the event stream's audiences), and a refused one
// writes nothing.
func TestLoadUpdatedEvents(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		l := lt.Create(t, s, lt.Organiser, lt.LoadForm("EV-1"))[0]
		audiences := func() map[string][]string {
			var rows []struct {
				ID       int64  `bun:"id"`
				Type     string `bun:"type"`
				Data     string `bun:"data"`
				Audience string `bun:"audience"`
			}
			if err := db.NewSelect().TableExpr("platform_events AS e").ColumnExpr("e.id, e.type, e.data, a.audience").
				Join("JOIN platform_event_audiences AS a ON a.event_id = e.id").OrderExpr("e.id, a.audience").Scan(context.Background(), &rows); err != nil {
				t.Fatal(err)
			}
			out := map[string][]string{}
			for _, r := range rows {
				if r.Type != "load.updated" {
					t.Fatalf("event type %s", r.Type)
				}
				var d struct{ LoadID, Status string }
				_ = json.Unmarshal([]byte(r.Data), &d)
				if d.LoadID != l.ID {
					t.Fatalf("event data %s", r.Data)
				}
				key := strconv.FormatInt(r.ID, 10) + " " + d.Status
				out[key] = append(out[key], r.Audience)
			}
			return out
		}
		lt.Send(t, s, lt.Outsider, "carrier", []map[string]any{{"loadId": l.ID, "carrierId": lt.Carrier.OrgID, "carrierName": lt.Carrier.OrgName}}, 404)
		if got := audiences(); len(got) != 0 {
			t.Fatalf("a refused hand-off wrote events: %v", got)
		}
		lt.Send(t, s, lt.Organiser, "carrier", []map[string]any{{"loadId": l.ID, "carrierId": lt.Carrier.OrgID, "carrierName": lt.Carrier.OrgName}}, 200)
		lt.Send(t, s, lt.Carrier, "driver", []map[string]any{{"loadId": l.ID, "driverId": lt.Driver.UserID, "driverName": lt.Driver.Name}}, 200)
		got := audiences()
		var lines []string
		for k, v := range got {
			lines = append(lines, k[strings.Index(k, " ")+1:]+": "+strings.Join(v, ","))
		}
		slices.Sort(lines)
		want := []string{"in-transit: org:org-grain,org:org-haul,user:u-drive-1", "upcoming: org:org-grain,org:org-haul"}
		if !slices.Equal(lines, want) {
			t.Fatalf("events %v, want %v", lines, want)
		}
	})
}
