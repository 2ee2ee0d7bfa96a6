package loads_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agritrade/api/logistics/internal/loads"
	lt "github.com/agritrade/api/logistics/internal/logisticstest"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/outbox"
	"github.com/agritrade/api/platform/outbox/outboxtest"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// TestHandOffNotifications checks the outbox events of both hand-offs (in the
// transaction of the change, nothing for a refused request) and their
// delivery by the real dispatcher to a local signed webhook.
func TestHandOffNotifications(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		hook := outboxtest.NewReceiver(t, "hook-secret")
		s := lt.NewServer(t, db, testkit.Options{Configure: func(c *config.Config) {
			c.Notify.Webhook.URL, c.Notify.Webhook.Secret = hook.URL, hook.Secret
			c.Notify.PollInterval = 20 * time.Millisecond
		}})
		ls := lt.Create(t, s, lt.Organiser, with(lt.LoadForm("N-1"), "pickupPostcode", "CB1 2AB", "dropoffPostcode", "PE1 1AA"), lt.LoadForm("N-2"))
		ctx := context.Background()

		// Refused requests leave no event behind.
		lt.Send(t, s, lt.Organiser, "carrier", []map[string]any{{"loadId": ls[0].ID, "carrierId": "org-haul"}, {"loadId": "unknown", "carrierId": "org-haul"}}, 404)
		if evs, err := outbox.List(ctx, db, outbox.Filter{}); err != nil || len(evs) != 0 {
			t.Fatalf("events after a refused request: %v %v", evs, err)
		}

		lt.Send(t, s, lt.Organiser, "carrier", []map[string]any{{"loadId": ls[0].ID, "carrierId": "org-haul", "carrierName": "Haul Ltd"}}, 200)
		lt.Send(t, s, lt.Carrier, "driver", []map[string]any{{"loadId": ls[0].ID, "driverId": lt.Driver.UserID, "driverName": "Dee Driver"}}, 200)

		toCarrier, err := outbox.List(ctx, db, outbox.Filter{Type: loads.EventSentToCarrier})
		if err != nil || len(toCarrier) != 1 {
			t.Fatalf("carrier events %v %v", toCarrier, err)
		}
		if got := toCarrier[0].RecipientList(); !slices.Equal(got, []string{"org-haul"}) || !strings.Contains(toCarrier[0].Body, "N-1") {
			t.Errorf("carrier event %+v", toCarrier[0])
		}
		toDriver, err := outbox.List(ctx, db, outbox.Filter{Type: loads.EventSentToDriver})
		if err != nil || len(toDriver) != 1 {
			t.Fatalf("driver events %v %v", toDriver, err)
		}
		var data struct {
			LoadID, Reference, Status, DeliveryDateISO, PickupPostcode string
			Driver                                                     struct{ ID, Name string }
			SentBy                                                     struct{ UserID, OrganisationID string }
		}
		if err := json.Unmarshal([]byte(toDriver[0].Data), &data); err != nil {
			t.Fatal(err)
		}
		if got := toDriver[0].RecipientList(); !slices.Equal(got, []string{lt.Driver.UserID}) || data.LoadID != ls[0].ID || data.Reference != "N-1" ||
			data.Status != "in-transit" || data.Driver.ID != lt.Driver.UserID || data.SentBy.OrganisationID != "org-haul" || data.PickupPostcode != "CB1 2AB" {
			t.Errorf("driver event %+v data %+v", toDriver[0], data)
		}
		if want := "Haul Ltd sent you load N-1: Wheat, delivery 2026-11-21, from CB1 2AB to PE1 1AA."; toDriver[0].Body != want {
			t.Errorf("driver event body %q, want %q", toDriver[0].Body, want)
		}

		// The dispatcher delivers both, signed, to the webhook.
		hook.WaitAccepted(t, 2, 15*time.Second)
		types := []string{}
		for _, d := range hook.Deliveries() {
			if !d.Verified {
				t.Errorf("unsigned delivery %+v", d)
			}
			types = append(types, d.Type)
		}
		slices.Sort(types)
		if !slices.Equal(types, []string{loads.EventSentToCarrier, loads.EventSentToDriver}) {
			t.Errorf("delivered %v", types)
		}
	})
}

// put uploads a small file as p through the real file store.
func put(t *testing.T, s *testkit.Server, p auth.Principal, name string) filestore.Ref {
	t.Helper()
	rec, err := s.Platform.Files.Put(context.Background(), &p, filestore.PutInput{
		Bucket: filestore.BucketFiles, Type: "weighbridge", Name: name, OrganisationID: p.OrgID,
		Body: strings.NewReader("weighbridge ticket " + name),
	})
	if err != nil {
		t.Fatalf("put %s: %v", name, err)
	}
	return rec.Ref()
}

func TestLoadFiles(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		mine := put(t, s, lt.Organiser, "ticket-1.txt")
		mine2 := put(t, s, lt.Organiser, "ticket-2.txt")
		theirs := put(t, s, lt.Outsider, "secret.txt")
		driversOwn := put(t, s, lt.Driver, "photo.txt")
		org := s.Token(lt.Organiser)
		ref := func(r filestore.Ref) map[string]any { return map[string]any{"id": r.ID} }
		var created lt.Load
		s.Run(t, []testkit.Scenario{
			{Name: "files400notReadable", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: with(lt.LoadForm("F-1"), "files", []any{ref(mine), ref(theirs), map[string]any{"id": "nope"}})}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "files[1].id", "files[2].id") }},
			{Name: "files400duplicate", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: with(lt.LoadForm("F-1"), "files", []any{ref(mine), ref(mine)})}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "files[1].id") }},
			{Name: "files400listPaths", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: []any{
				with(lt.LoadForm("F-1"), "files", []any{ref(mine)}), with(lt.LoadForm("F-2"), "files", []any{ref(mine2), ref(theirs)}),
			}}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "[1].files[1].id") }},
			{Name: "files200sameFileTwoLoads", Req: testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: org, JSON: []any{
				with(lt.LoadForm("F-1"), "files", []any{ref(mine)}), with(lt.LoadForm("F-2"), "files", []any{ref(mine), ref(mine2)}),
			}}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var got []lt.Load
					r.Decode(t, &got)
					created = got[0]
					var files []filestore.Ref
					if err := json.Unmarshal(got[1].Files, &files); err != nil {
						t.Fatal(err)
					}
					if len(files) != 2 || files[0] != mine || files[1].ID != mine2.ID || files[0].Name != "ticket-1.txt" || files[0].UserID != lt.Organiser.UserID || !strings.Contains(files[0].URL, mine.ID) {
						t.Errorf("files %+v, want the canonical refs", files)
					}
				}},
		})
		// The driver's proof of delivery adds the driver's photo to the load's files.
		lt.Send(t, s, lt.Organiser, "driver", []map[string]any{{"loadId": created.ID, "driverId": lt.Driver.UserID}}, 200)
		pod := map[string]any{"weightNet": 20, "ticketNumber": "T", "vehicleRegistration": "V", "files": []any{ref(mine)}}
		r := s.Do(testkit.Request{Method: http.MethodPost, Path: loadsPath + "/" + created.ID + "/proof-of-delivery", Token: s.Token(lt.Driver), JSON: pod})
		if r.Status != 400 {
			t.Fatalf("driver attaching the organiser's file: %d %s", r.Status, r.Body)
		}
		r = s.Do(testkit.Request{Method: http.MethodPost, Path: loadsPath + "/" + created.ID + "/proof-of-delivery", Token: s.Token(lt.Driver), JSON: with(pod, "files", []any{ref(driversOwn)})})
		if r.Status != 200 {
			t.Fatalf("pod: %d %s", r.Status, r.Body)
		}
		var done lt.Load
		r.Decode(t, &done)
		var files []filestore.Ref
		if err := json.Unmarshal(done.Files, &files); err != nil {
			t.Fatal(err)
		}
		if len(files) != 2 || files[0].ID != mine.ID || files[1].ID != driversOwn.ID {
			t.Errorf("files after the proof %+v", files)
		}
	})
}
